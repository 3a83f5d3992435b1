"""What every attention block here shares, written once: RoPE in the form the CPU plugin fuses, the head layout,
grouped-query key/value repetition. Used by the talker and code predictor (decoder.py), the codec decoder and the
codec encoder.
"""
from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.ops import ints, scalar, slice_axis


def rope_tables(positions: ov.Output, head_dim: int, theta: float) -> tuple[ov.Output, ov.Output]:
    """cos and sin [..., S, head_dim] for i64 positions [..., S]: the default RoPE of the Hugging Face models, its
    inverse frequencies computed in f32 exactly as they are there, each repeated twice (rotate_half layout)."""
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / head_dim
    inv_freq = (1.0 / (float(theta) ** exponents)).astype(np.float32)
    angles = op.multiply(op.unsqueeze(op.convert(positions, "f32"), ints([-1])), op.constant(inv_freq))
    doubled = op.concat([angles, angles], -1)
    return op.cos(doubled).output(0), op.sin(doubled).output(0)


def apply_rope(x: ov.Output, cos: ov.Output, sin: ov.Output, head_dim: int) -> ov.Output:
    """x [B, H, S, D] rotated; rotate_half as Slice + Multiply(-1), the form the CPU plugin recognises as RoPE
    (VariadicSplit + Negative is not fused)."""
    half = head_dim // 2
    rotated = op.concat([op.multiply(slice_axis(x, half, head_dim, -1), scalar(-1.0)),
                         slice_axis(x, 0, half, -1)], -1)
    return op.add(op.multiply(x, cos), op.multiply(rotated, sin)).output(0)


def split_heads(x: ov.Output, count: int, head_dim: int) -> ov.Output:
    """[B, S, count * head_dim] -> [B, S, count, head_dim]"""
    return op.reshape(x, ints([0, 0, count, head_dim]), special_zero=True).output(0)


def to_bhsd(x: ov.Output) -> ov.Output:
    """[B, S, H, D] <-> [B, H, S, D]"""
    return op.transpose(x, ints([0, 2, 1, 3])).output(0)


def merge_heads(x: ov.Output, count: int, head_dim: int) -> ov.Output:
    """[B, H, S, D] -> [B, S, H * D]"""
    return op.reshape(to_bhsd(x), ints([0, 0, count * head_dim]), special_zero=True).output(0)


def repeat_kv(x: ov.Output, num_heads: int, num_kv_heads: int, head_dim: int) -> ov.Output:
    """[B, kv_heads, S, D] -> [B, heads, S, D]: each key/value head serves heads / kv_heads query heads."""
    groups = num_heads // num_kv_heads
    if groups == 1:
        return x
    expanded = op.broadcast(op.unsqueeze(x, ints([2])), ints([1, 1, groups, 1, 1]), broadcast_spec="BIDIRECTIONAL")
    return op.reshape(expanded, ints([0, num_heads, -1, head_dim]), special_zero=True).output(0)
