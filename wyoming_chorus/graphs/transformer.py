"""The Qwen3 decoder stack shared by the talker and the code predictor.

One layer: RMSNorm -> attention (q/k RMSNorm per head, RoPE, GQA, SDPA with an explicit mask) -> residual ->
RMSNorm -> SwiGLU MLP -> residual. q/k/v are one matrix product and gate/up another (ops.fused_linear): four
FullyConnected calls a layer instead of seven, each of which pays the plugin's fixed costs (the code predictor runs
its layers 15 times a frame). The talker's MRoPE feeds identical t/h/w positions for TTS, which is exactly
1-D RoPE, so both models use the same rotary code.

K/V history lives in OpenVINO state variables (`KVState`), in the layout the CPU plugin's stateful SDPA fusion and
the SDPAToPagedAttention pass both recognise: ReadValue -> [Gather(beam_idx)] -> Concat(axis=2) -> Assign, then
Unsqueeze -> Broadcast -> Reshape to repeat K/V heads for grouped-query attention.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.attention import apply_rope, merge_heads, repeat_kv, rope_tables, split_heads, to_bhsd
from wyoming_chorus.graphs.ops import Weights, arange, dim, fused_linear, ints, linear, require, rms_norm, scalar, silu

# Added to masked attention scores; finite so that a fully masked (left-padding) row stays NaN-free.
_MASKED = np.float32(np.finfo(np.float32).min)


@dataclass(frozen=True)
class DecoderSpec:
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float

    @classmethod
    def from_config(cls, config: Mapping, where: str) -> DecoderSpec:
        rope_scaling = config.get("rope_scaling") or {}
        rope_type = rope_scaling.get("rope_type", rope_scaling.get("type", "default"))
        if rope_type != "default":
            raise ValueError(f"{where}: rope_type {rope_type!r} is not supported (only plain RoPE)")
        hidden = int(require(config, "hidden_size", where))
        heads = int(require(config, "num_attention_heads", where))
        kv_heads = int(require(config, "num_key_value_heads", where))
        if heads % kv_heads:
            raise ValueError(f"{where}: {heads} attention heads are not a multiple of {kv_heads} kv heads")
        return cls(
            num_layers=int(require(config, "num_hidden_layers", where)),
            hidden_size=hidden,
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=int(config.get("head_dim") or hidden // heads),
            intermediate_size=int(require(config, "intermediate_size", where)),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_theta=float(config.get("rope_theta", 10000.0)),
        )


class KVState:
    """Per-layer K/V state variables, initialised to an empty history sized from the batch of `batch_of`.

    Without a `beam_idx` input the history is gathered with the identity order: the CPU plugin fuses stateful
    attention only through ReadValue -> Gather -> Concat (without the Gather it falls back to MatMul + Softmax).
    """

    def __init__(self, name: str, spec: DecoderSpec, batch_of: ov.Output, beam_idx: ov.Output | None = None):
        batch = dim(batch_of, 0)
        empty_shape = op.concat([batch, ints([spec.num_kv_heads, 0, spec.head_dim])], 0)
        empty = op.broadcast(scalar(0.0), empty_shape).output(0)
        shape = ov.PartialShape([-1, spec.num_kv_heads, -1, spec.head_dim])
        self._beam_idx = beam_idx if beam_idx is not None else op.convert(arange(ints([0]), batch), "i32").output(0)
        self._past = [
            tuple(self._read(empty, f"{name}.{i}.{kind}", shape) for kind in ("key", "value"))
            for i in range(spec.num_layers)
        ]
        self.assigns: list[ov.Node] = []

    @staticmethod
    def _read(empty: ov.Output, variable_id: str, shape: ov.PartialShape) -> tuple[ov.Output, ov.op.util.Variable]:
        info = ov.op.util.VariableInfo()
        info.variable_id, info.data_type, info.data_shape = variable_id, ov.Type.f32, shape
        variable = ov.op.util.Variable(info)
        return op.read_value(empty, variable).output(0), variable

    def past_length(self) -> ov.Output:
        """Positions already held (the same for every layer and batch entry), as i64 [1]."""
        (first_key, _), _ = self._past[0]
        return dim(first_key, 2)

    def append(self, layer: int, key: ov.Output, value: ov.Output) -> tuple[ov.Output, ov.Output]:
        full = []
        for (past, variable), new in zip(self._past[layer], (key, value), strict=True):
            reordered = op.gather(past, self._beam_idx, ints(0))
            both = op.concat([reordered, new], 2).output(0)
            self.assigns.append(op.assign(both.get_node(), variable))
            full.append(both)
        return full[0], full[1]


def causal_mask(query_len: ov.Output, key_len: ov.Output) -> ov.Output:
    """bool [S, T]: query i (absolute position T - S + i) may see key j <= T - S + i."""
    past = op.subtract(key_len, query_len)
    rows = op.add(op.unsqueeze(arange(ints(0), query_len), ints([1])), past)
    cols = op.unsqueeze(arange(ints(0), key_len), ints([0]))
    return op.less_equal(cols, rows).output(0)


def additive_mask(allowed: ov.Output) -> ov.Output:
    return op.select(allowed, scalar(0.0), op.constant(_MASKED)).output(0)


def _attention(x: ov.Output, weights: Weights, prefix: str, spec: DecoderSpec, layer: int,
               rope: tuple[ov.Output, ov.Output], mask: ov.Output, kv: KVState) -> ov.Output:
    d, h, kvh = spec.head_dim, spec.num_heads, spec.num_kv_heads
    eps = spec.rms_norm_eps
    q, k, v = fused_linear(x, weights, [f"{prefix}.{name}_proj" for name in "qkv"], [h * d, kvh * d, kvh * d],
                           spec.hidden_size)
    q, k, v = split_heads(q, h, d), split_heads(k, kvh, d), split_heads(v, kvh, d)
    q = apply_rope(to_bhsd(rms_norm(q, weights, f"{prefix}.q_norm.weight", d, eps)), *rope, d)
    k = apply_rope(to_bhsd(rms_norm(k, weights, f"{prefix}.k_norm.weight", d, eps)), *rope, d)
    k_all, v_all = kv.append(layer, k, to_bhsd(v))
    out = op.scaled_dot_product_attention(q, repeat_kv(k_all, h, kvh, d), repeat_kv(v_all, h, kvh, d), mask,
                                          causal=False)
    merged = merge_heads(out, h, d)
    return linear(merged, weights, f"{prefix}.o_proj", spec.hidden_size, h * d)


def _mlp(x: ov.Output, weights: Weights, prefix: str, spec: DecoderSpec) -> ov.Output:
    hidden, inner = spec.hidden_size, spec.intermediate_size
    gate, up = fused_linear(x, weights, [f"{prefix}.gate_proj", f"{prefix}.up_proj"], [inner, inner], hidden)
    return linear(op.multiply(silu(gate), up).output(0), weights, f"{prefix}.down_proj", hidden, inner)


def decoder_stack(x: ov.Output, weights: Weights, prefix: str, spec: DecoderSpec, positions: ov.Output,
                  mask: ov.Output, kv: KVState) -> ov.Output:
    """All layers and the final norm of `{prefix}.layers.*` / `{prefix}.norm`; returns [B, S, hidden]."""
    cos, sin = rope_tables(positions, spec.head_dim, spec.rope_theta)  # [B, S, D]
    rope = (op.unsqueeze(cos, ints([1])).output(0), op.unsqueeze(sin, ints([1])).output(0))  # one for all heads
    eps = spec.rms_norm_eps
    for i in range(spec.num_layers):
        layer = f"{prefix}.layers.{i}"
        normed = rms_norm(x, weights, f"{layer}.input_layernorm.weight", spec.hidden_size, eps)
        x = op.add(x, _attention(normed, weights, f"{layer}.self_attn", spec, i, rope, mask, kv)).output(0)
        normed = rms_norm(x, weights, f"{layer}.post_attention_layernorm.weight", spec.hidden_size, eps)
        x = op.add(x, _mlp(normed, weights, f"{layer}.mlp", spec)).output(0)
    return rms_norm(x, weights, f"{prefix}.norm.weight", spec.hidden_size, eps)
