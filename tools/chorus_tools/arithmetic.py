"""What OpenVINO's CPU plugin computes per second on this CPU in each arithmetic it has: matrix products against
constant weights (FullyConnected), the kind a language-model step and the codec's convolutions are made of.

- f32: f32 weights, INFERENCE_PRECISION_HINT f32 (every x86-64 CPU);
- bf16: the same at the bf16 hint, only where the plugin honours it (AVX-512 bf16, AMX): bf16 dot products;
- int8: activations and weights both quantised (a FakeQuantize on each input of the product, as a post-training
  INT8 graph has them), so the plugin runs its int8 kernels (VNNI / AMX-INT8 dot products).
Each is timed at a few row counts (a batch of steps, the codec's long blocks) and the best is the arithmetic's rate.
The kernel each ran on is kept, so that a figure names what it measured (an int8 figure on a `brgemm_*_I8` kernel is
integer arithmetic, one on any other is not).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset13 as op

from chorus_tools.engine_bench import time_steps
from wyoming_chorus.cpu import cpu_facts

ROWS = (8, 64, 256)


@dataclass(frozen=True)
class Throughput:
    arithmetic: str
    gflop_s: dict[int, float]  # by rows
    kernel: str  # the plugin's primitive for the product, e.g. brgemm_avx512_I8

    @property
    def peak(self) -> float:
        return max(self.gflop_s.values())


def arithmetics() -> tuple[str, ...]:
    """The arithmetics this CPU's plugin can run: bf16 only where its hint is honoured (not on AVX2)."""
    return ("f32", "bf16", "int8") if cpu_facts().inference_precision("bf16") == "bf16" else ("f32", "int8")


def product(rows: int, k: int, n: int, arithmetic: str) -> tuple[ov.CompiledModel, np.ndarray]:
    """A compiled rows x k times k x n product in `arithmetic`, and an input for it."""
    rng = np.random.default_rng(0)
    x = op.parameter([rows, k], np.float32)
    weights = op.constant(rng.standard_normal((n, k)).astype(np.float32))
    hint = "bf16" if arithmetic == "bf16" else "f32"
    if arithmetic == "int8":
        low, high = op.constant(np.float32(-4)), op.constant(np.float32(4))
        x_in, weights = op.fake_quantize(x, low, high, low, high, 256), op.fake_quantize(weights, low, high, low,
                                                                                         high, 255)
    else:
        x_in = x
    model = ov.Model([op.matmul(x_in, weights, False, True)], [x])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": hint})
    return compiled, rng.standard_normal((rows, k)).astype(np.float32)


def gflop_s(rows: int, arithmetic: str, k: int = 1024, n: int = 3072) -> tuple[float, str]:
    """GFLOP/s (2 per multiply-accumulate) of one product, and the kernel it ran on."""
    compiled, data = product(rows, k, n, arithmetic)
    request = compiled.create_infer_request()
    for _ in range(3):
        request.infer([data])
    seconds = time_steps(lambda: request.infer([data]), 21) / 1000
    return 2 * rows * k * n / seconds / 1e9, product_kernel(compiled)


def product_kernel(compiled: ov.CompiledModel) -> str:
    for node in compiled.get_runtime_model().get_ordered_ops():
        info = node.get_rt_info()
        if info["layerType"].astype(str) in ("FullyConnected", "MatMul"):
            return info["primitiveType"].astype(str)
    return "?"


def throughput(arithmetic: str, rows: tuple[int, ...] = ROWS) -> Throughput:
    rates, kernel = {}, "?"
    for m in rows:
        rates[m], kernel = gflop_s(m, arithmetic)
    return Throughput(arithmetic, rates, kernel)


def bandwidth_gb_s() -> float:
    """How fast OpenVINO streams weights from memory: one row through a 128 MB f32 FullyConnected (4x a large L3),
    all threads, as a batch-1 step reads its weights."""
    return gflop_s(1, "f32", k=4096, n=8192)[0] / 2 * 4  # one multiply-accumulate per 4-byte weight
