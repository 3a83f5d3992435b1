"""The code predictor graph: predicts codebooks 1..15 of a frame, one call per codebook.

Stateful over one frame only (at most 17 positions; the caller resets the state per frame), so it needs no paging:
positions are the state's length + arange(T), the state starts empty with the batch of inputs_embeds.
Inputs "inputs_embeds" f32 [B, T, H_talker] and "head_index" i64 [] (which of the 15 heads);
output "logits" f32 [B, 2048] = lm_head[head_index](norm(hidden)[:, -1]).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.ops import (
    Weights,
    arange,
    constant,
    dim,
    ints,
    last_row,
    linear,
    named_input,
    named_output,
    require,
)
from wyoming_chorus.graphs.transformer import DecoderSpec, KVState, additive_mask, causal_mask, decoder_stack

PREFIX = "talker.code_predictor"


def build_code_predictor(weights: Mapping[str, np.ndarray], config: Mapping) -> ov.Model:
    talker_config = require(config, "talker_config", "config.json")
    cp_config = require(talker_config, "code_predictor_config", "talker_config")
    spec = DecoderSpec.from_config(cp_config, "code_predictor_config")
    talker_hidden = int(require(talker_config, "hidden_size", "talker_config"))
    vocab = int(require(cp_config, "vocab_size", "code_predictor_config"))
    heads = int(require(cp_config, "num_code_groups", "code_predictor_config")) - 1
    w = Weights(weights)

    embeds = named_input("inputs_embeds", ov.Type.f32, [-1, -1, talker_hidden])
    head_index = named_input("head_index", ov.Type.i64, [])

    x = embeds.output(0)
    # The reference swaps in nn.Identity when both models share a width; the checkpoint then has no tensor.
    if spec.hidden_size != talker_hidden:
        x = linear(x, w, f"{PREFIX}.small_to_mtp_projection", spec.hidden_size, talker_hidden, bias=True)
    kv = KVState("code_predictor", spec, x)
    past = kv.past_length()
    new = dim(x, 1)
    positions = op.unsqueeze(arange(past, op.add(past, new).output(0)), ints([0]))
    mask = additive_mask(op.unsqueeze(causal_mask(new, op.add(past, new).output(0)), ints([0, 1])).output(0))

    hidden = last_row(decoder_stack(x, w, f"{PREFIX}.model", spec, positions.output(0), mask, kv))
    heads_weight = np.stack([w.array_of_shape(f"{PREFIX}.lm_head.{j}.weight", (vocab, spec.hidden_size))
                             for j in range(heads)])
    head = op.gather(constant(heads_weight), head_index, ints(0))
    logits = op.matmul(hidden, head, False, True).output(0)
    return ov.Model([named_output(logits, "logits")], kv.assigns, [embeds, head_index], "code_predictor")

