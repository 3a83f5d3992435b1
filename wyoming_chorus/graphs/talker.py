"""The talker graph: the stateful Qwen3 decoder the native runner converts to PagedAttention at load.

Inputs inputs_embeds f32 [B, S, H], attention_mask i64 [B, past+S], position_ids i64 [B, S], beam_idx i32 [B];
outputs "logits" [B, S, codec vocab] (codec_head) and "hidden" [B, S, H] (after the final RMSNorm).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.ops import Weights, dim, ints, linear, named_input, named_output, require
from wyoming_chorus.graphs.transformer import DecoderSpec, KVState, additive_mask, causal_mask, decoder_stack

PREFIX = "talker.model"


def build_talker(weights: Mapping[str, np.ndarray], config: Mapping) -> ov.Model:
    talker_config = require(config, "talker_config", "config.json")
    spec = DecoderSpec.from_config(talker_config, "talker_config")
    vocab = int(require(talker_config, "vocab_size", "talker_config"))
    w = Weights(weights)

    embeds = named_input("inputs_embeds", ov.Type.f32, [-1, -1, spec.hidden_size])
    attention_mask = named_input("attention_mask", ov.Type.i64, [-1, -1])
    position_ids = named_input("position_ids", ov.Type.i64, [-1, -1])
    beam_idx = named_input("beam_idx", ov.Type.i32, [-1])

    x = embeds.output(0)
    kv = KVState("talker", spec, x, beam_idx.output(0))
    # [S, T] causal part and [B, 1, 1, T] padding part; left padding stays masked for batched reference runs.
    causal = causal_mask(dim(x, 1), dim(attention_mask.output(0), 1))
    padding = op.unsqueeze(op.not_equal(attention_mask, ints(0)), ints([1, 2]))
    mask = additive_mask(op.logical_and(causal, padding).output(0))

    hidden = decoder_stack(x, w, PREFIX, spec, position_ids.output(0), mask, kv)
    logits = linear(hidden, w, "talker.codec_head", vocab, spec.hidden_size)
    return ov.Model(
        [named_output(logits, "logits"), named_output(hidden, "hidden")],
        kv.assigns,
        [embeds, attention_mask, position_ids, beam_idx],
        "talker",
    )
