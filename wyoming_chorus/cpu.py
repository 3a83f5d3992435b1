"""This CPU as the OpenVINO CPU plugin sees it: which instructions it has (from CPUID, via the native module),
which precision hints the plugin honours and computes in, and which KV cache types its paged attention can keep.
Asked by the engine (which device, which precisions) and by the exporter (which weights suit this CPU), before
anything is compiled.

The CPU rule (openvino 2026.4.1): attention computes in the model's inference precision, and the paged kernel pairs
each inference precision with only some cache types. Measured on the paged talker (the f32 row on an AVX2 CPU with
every hint, the bf16 row on an AMX CPU, see the shared PagedAttention note):

| inference (what the plugin runs) | u8 | f16 | bf16 | f32 |
|---|---|---|---|---|
| f32 (the default without avx512_bf16; any bf16/f16 hint the CPU lacks falls back to it) | u8 | f16 | fails | f32 |
| bf16 (the default with avx512_bf16 / AMX) | u8 | kept as bf16 | bf16 | fails |
| f16 (a hint, on CPUs with FP16) | u8 | f16 | ? | ? |

The f16 row follows the plugin's kernel selection (u8 or f16 caches only); no machine here has FP16 to measure it,
so the two unknown cells are refused rather than guessed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import openvino as ov
import openvino.opset13 as ops

from wyoming_chorus.native_module import _native

# The requested KV_CACHE_PRECISION -> the type the cache then holds, by the precision attention computes in.
_CPU_KV_CACHE = {
    "f32": {"u8": "u8", "f16": "f16", "f32": "f32"},
    "bf16": {"u8": "u8", "f16": "bf16", "bf16": "bf16"},
    "f16": {"u8": "u8", "f16": "f16"},
}

# The most telling of these ISA extensions (named as /proc/cpuinfo names them) names the CPU in messages
# ("this CPU (avx2)").
_ISA_FLAGS = ("amx_bf16", "avx512_bf16", "avx512f", "avx2")


@dataclass(frozen=True)
class CpuFacts:
    """The CPU plugin's view of this CPU: OPTIMIZATION_CAPABILITIES (which bf16 / f16 hints it honours), the
    inference precision it computes in when given no hint, and a name for messages. The default is measured, not
    derived from the capabilities: BF16 is also listed on avx2_vnni_2 CPUs, where the default stays f32."""

    capabilities: tuple[str, ...]
    default_inference: str
    isa: str

    def inference_precision(self, hint: str) -> str:
        """The precision the plugin computes in for an INFERENCE_PRECISION_HINT ("" = none): a bf16 or f16 hint the
        CPU lacks is ignored and the plugin computes in f32."""
        if not hint:
            return self.default_inference
        if hint == "bf16":
            return "bf16" if "BF16" in self.capabilities else "f32"
        if hint == "f16":
            return "f16" if "FP16" in self.capabilities else "f32"
        if hint == "f32":
            return "f32"
        raise ValueError(f"inference_precision must be '', f32, bf16 or f16, got {hint!r}")

    def kv_caches(self, hint: str) -> dict[str, str]:
        """The KV precisions the paged talker can run at this hint, each mapped to the type its cache holds."""
        return dict(_CPU_KV_CACHE[self.inference_precision(hint)])

    def kv_error(self, kv_precision: str, hint: str) -> str | None:
        """Why kv_precision cannot run at this hint, as one line naming what can; None when it can run."""
        runnable = self.kv_caches(hint)
        if kv_precision in runnable:
            return None
        inference = self.inference_precision(hint)
        # Name the inference precision only where it is a choice (an AVX2 CPU computes in f32 whatever the hint).
        choices = {self.inference_precision(other) for other in ("", "f32", "bf16", "f16")}
        at = f" at {'its default ' if not hint else ''}{inference} inference" if len(choices) > 1 else ""
        can = ", ".join(kv if kept == kv else f"{kv} (kept as {kept})" for kv, kept in runnable.items())
        # Another hint helps only if the CPU honours it (a hint it lacks computes in f32 again).
        fixes = [f"{kv_precision} with engine.inference_precision {other}" for other in ("f32", "bf16", "f16")
                 if self.inference_precision(other) == other != inference and kv_precision in self.kv_caches(other)]
        return (f"engine.kv_precision {kv_precision}: this CPU ({self.isa}) cannot run {_article(kv_precision)} "
                f"{kv_precision} KV cache{at}; it can run {can}" + "".join(f", or {fix}" for fix in fixes))


@functools.cache
def cpu_facts() -> CpuFacts:
    """This CPU's facts. The default inference precision is read from a compiled one-op model (~50 ms): the plugin
    settles its default while compiling, so the core-level INFERENCE_PRECISION_HINT need not show it."""
    core = ov.Core()
    capabilities = tuple(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    x = ops.parameter([1], ov.Type.f32)
    probe = core.compile_model(ov.Model([ops.relu(x)], [x]), "CPU")
    default = probe.get_property("INFERENCE_PRECISION_HINT").get_type_name()
    return CpuFacts(capabilities, default, _isa() or core.get_property("CPU", "FULL_DEVICE_NAME"))


def _isa() -> str:
    """The most telling of _ISA_FLAGS, from CPUID (native/device.cpp): what the plugin's kernels dispatch on. Not
    /proc/cpuinfo, which under an emulator (.ci/avx2 runs tests as on an AVX2 CPU) still describes the host."""
    isa = _native.cpu_isa()
    assert isa in _ISA_FLAGS + ("",), isa
    return isa


def _article(precision: str) -> str:
    return "an" if precision.startswith("f") else "a"  # an f32, a u8, a bf16
