"""Small OpenVINO graph helpers shared by every graph builder.

Two shapes here are chosen for the CPU plugin's fusion passes, not for brevity (a hand-built graph ran 1.8x slower
until they were right): SiLU is a Swish *without* a beta input (opset4.swish adds beta=1.0, which blocks the fused
MLP), and rotate_half is Slice + Multiply(-1) (VariadicSplit + Negative blocks the fused RoPE).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import openvino as ov
import openvino.opset13 as op
from openvino.utils.node_factory import NodeFactory

_OPSET4 = NodeFactory("opset4")
_INT64_MAX = np.iinfo(np.int64).max


class Weights:
    """A read-only view of a checkpoint's tensors that names the missing key instead of raising KeyError."""

    def __init__(self, tensors: Mapping[str, np.ndarray]):
        self._tensors = tensors

    def array(self, key: str) -> np.ndarray:
        if key not in self._tensors:
            raise ValueError(f"the weights have no tensor {key!r}")
        return np.asarray(self._tensors[key])

    def const(self, key: str, shape: tuple[int, ...]) -> ov.Output:
        return constant(self.array_of_shape(key, shape))

    def array_of_shape(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        array = self.array(key)
        if tuple(array.shape) != tuple(shape):
            raise ValueError(f"tensor {key!r} has shape {list(array.shape)}, the config implies {list(shape)}")
        return array


def require(config: Mapping, key: str, where: str):
    if key not in config:
        raise ValueError(f"the config has no {key!r} in {where}")
    return config[key]


def constant(array: np.ndarray) -> ov.Output:
    # f32 constants: save_model(compress_to_fp16=...) decides the stored precision, not the builder.
    # Shared: the graph references the caller's buffer instead of copying it (halves peak memory at 1.7B).
    return op.constant(np.ascontiguousarray(array, dtype=np.float32), shared_memory=True).output(0)


def scalar(value: float) -> ov.Output:
    return op.constant(np.float32(value)).output(0)


def ints(values) -> ov.Output:
    return op.constant(np.asarray(values, dtype=np.int64)).output(0)


def named_input(name: str, element_type: ov.Type, shape: list[int]) -> ov.Node:
    param = op.parameter(ov.PartialShape(shape), element_type, name=name)
    param.output(0).get_tensor().set_names({name})
    return param


def named_output(value: ov.Output, name: str) -> ov.Node:
    result = op.result(value)
    result.set_friendly_name(name)
    result.output(0).get_tensor().set_names({name})
    return result


def linear(x: ov.Output, weights: Weights, prefix: str, out_features: int, in_features: int,
           bias: bool = False) -> ov.Output:
    """HF nn.Linear: weight [out, in], so MatMul with transpose_b (the layout the fused MLP/FC kernels expect)."""
    y = op.matmul(x, weights.const(f"{prefix}.weight", (out_features, in_features)), False, True).output(0)
    if bias:
        y = op.add(y, weights.const(f"{prefix}.bias", (out_features,))).output(0)
    return y


def fused_linear(x: ov.Output, weights: Weights, prefixes: Sequence[str], out_features: Sequence[int],
                 in_features: int) -> list[ov.Output]:
    """Several bias-free HF nn.Linear of one input as one MatMul over their weights stacked along the outputs, then
    split: one FullyConnected call instead of len(prefixes). Compression stays per output row (INT8 per channel,
    INT4 groups along the inputs), so each part keeps the numbers it would have alone."""
    stacked = np.concatenate([weights.array_of_shape(f"{prefix}.weight", (out, in_features))
                              for prefix, out in zip(prefixes, out_features, strict=True)])
    y = op.matmul(x, constant(stacked), False, True)
    return list(op.variadic_split(y, ints(-1), ints(list(out_features))).outputs())


def silu(x: ov.Output) -> ov.Output:
    return _OPSET4.create("Swish", [x]).output(0)


def rms_norm(x: ov.Output, weights: Weights, key: str, size: int, eps: float) -> ov.Output:
    # x / sqrt(mean(x^2) + eps) * gamma in the exact op order the RMS fusion pattern matches.
    square = op.power(x, scalar(2.0))
    mean = op.reduce_mean(square, ints([-1]), keep_dims=True)
    inv = op.divide(scalar(1.0), op.sqrt(op.add(mean, scalar(eps))))
    return op.multiply(op.multiply(x, inv), weights.const(key, (size,))).output(0)


def dim(x: ov.Output, axis: int) -> ov.Output:
    """The size of one axis as an i64 [1] tensor."""
    return op.gather(op.shape_of(x, "i64"), ints([axis]), ints(0)).output(0)


def arange(start: ov.Output, stop: ov.Output) -> ov.Output:
    """i64 [stop - start] from two i64 [1] tensors."""
    return op.range(op.squeeze(start, ints([0])), op.squeeze(stop, ints([0])), ints(1), "i64").output(0)


def slice_axis(x: ov.Output, start: int, stop: int, axis: int) -> ov.Output:
    return op.slice(x, ints([start]), ints([stop]), ints([1]), ints([axis])).output(0)


def last_row(x: ov.Output) -> ov.Output:
    """[B, T, C] -> [B, C]: the last position of every batch entry."""
    return op.squeeze(op.slice(x, ints([-1]), ints([_INT64_MAX]), ints([1]), ints([1])), ints([1])).output(0)
