"""The text graph: text_projection(text_embedding(ids)), the text track of every talker input row.

Input "input_ids" i64 [N]; output "embeds" f32 [N, H_talker]. text_projection is linear_fc1 -> SiLU -> linear_fc2,
both with bias, text_hidden -> text_hidden -> H_talker.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.ops import Weights, ints, linear, named_input, named_output, require, silu


def build_text(weights: Mapping[str, np.ndarray], config: Mapping) -> ov.Model:
    talker_config = require(config, "talker_config", "config.json")
    hidden = int(require(talker_config, "hidden_size", "talker_config"))
    text_hidden = int(require(talker_config, "text_hidden_size", "talker_config"))
    text_vocab = int(require(talker_config, "text_vocab_size", "talker_config"))
    w = Weights(weights)

    ids = named_input("input_ids", ov.Type.i64, [-1])
    table = w.const("talker.model.text_embedding.weight", (text_vocab, text_hidden))
    x = op.gather(table, ids, ints(0)).output(0)
    x = silu(linear(x, w, "talker.text_projection.linear_fc1", text_hidden, text_hidden, bias=True))
    x = linear(x, w, "talker.text_projection.linear_fc2", hidden, text_hidden, bias=True)
    return ov.Model([named_output(x, "embeds")], [ids], "text")
