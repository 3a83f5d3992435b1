"""The Base model's speaker encoder (ECAPA-TDNN) as an OpenVINO graph, from the checkpoint's `speaker_encoder.*`.

Input "mel" f32 [1, frames, 128] (frontend/mel.py), output "embedding" f32 [enc_dim]: the x-vector that takes
the place of a speaker id's codec embedding in the prompt (enc_dim is the talker's hidden size). Mirrors
Qwen3TTSSpeakerEncoder of qwen-tts: every Conv1d there is padding="same" with padding_mode="reflect", so each
convolution here is a reflect Pad followed by an unpadded Convolution. The attentive pooling's mask is all ones
(one clip, no padding), so its masked statistics are plain means over time.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.ops import Weights, constant, ints, named_input, named_output, scalar

_PREFIX = "speaker_encoder"
# Qwen3TTSSpeakerEncoderConfig's defaults: a config.json may leave out what it does not change.
DEFAULTS = {"mel_dim": 128, "enc_dim": 1024, "enc_channels": [512, 512, 512, 512, 1536],
            "enc_kernel_sizes": [5, 3, 3, 3, 1], "enc_dilations": [1, 2, 3, 4, 1], "enc_attention_channels": 128,
            "enc_res2net_scale": 8, "enc_se_channels": 128, "sample_rate": 24000}
_EPS = 1e-12  # AttentiveStatisticsPooling.eps: the variance's floor


def build_speaker_encoder(weights: Mapping[str, np.ndarray], config: Mapping) -> ov.Model:
    """`config` is config.json's speaker_encoder_config."""
    w = Weights(weights)
    config = {**DEFAULTS, **config}
    mel_dim = int(config["mel_dim"])
    channels = [int(c) for c in config["enc_channels"]]
    kernels = [int(k) for k in config["enc_kernel_sizes"]]
    dilations = [int(d) for d in config["enc_dilations"]]
    scale = int(config["enc_res2net_scale"])
    se_channels = int(config["enc_se_channels"])
    attention = int(config["enc_attention_channels"])
    enc_dim = int(config["enc_dim"])

    mel = named_input("mel", ov.Type.f32, [1, -1, mel_dim])
    x = op.transpose(mel, ints([0, 2, 1])).output(0)  # [1, mel, frames]
    x = _tdnn(x, w, f"{_PREFIX}.blocks.0", mel_dim, channels[0], kernels[0], dilations[0])
    outputs = []
    for i in range(1, len(channels) - 1):
        x = _se_res2net(x, w, f"{_PREFIX}.blocks.{i}", channels[i - 1], channels[i], scale, se_channels,
                        kernels[i], dilations[i])
        outputs.append(x)
    x = _tdnn(op.concat(outputs, 1).output(0), w, f"{_PREFIX}.mfa", channels[-1], channels[-1], kernels[-1],
              dilations[-1])
    pooled = _attentive_pooling(x, w, f"{_PREFIX}.asp", channels[-1], attention)   # [1, 2C, 1]
    embedding = _conv(pooled, w, f"{_PREFIX}.fc", channels[-1] * 2, enc_dim, 1, 1)
    embedding = op.reshape(embedding, ints([enc_dim]), False).output(0)
    return ov.Model([named_output(embedding, "embedding")], [mel], "speaker_encoder")


def _conv(x: ov.Output, w: Weights, prefix: str, cin: int, cout: int, kernel: int, dilation: int) -> ov.Output:
    """nn.Conv1d(padding="same", padding_mode="reflect") with bias: torch puts the odd pixel on the right."""
    total = dilation * (kernel - 1)
    if total:
        x = op.pad(x, ints([0, 0, total // 2]), ints([0, 0, total - total // 2]), "reflect").output(0)
    y = op.convolution(x, w.const(f"{prefix}.weight", (cout, cin, kernel)), [1], [0], [0], [dilation]).output(0)
    bias = w.array_of_shape(f"{prefix}.bias", (cout,)).reshape(1, cout, 1)
    return op.add(y, constant(bias)).output(0)


def _tdnn(x, w, prefix, cin, cout, kernel, dilation) -> ov.Output:
    return op.relu(_conv(x, w, f"{prefix}.conv", cin, cout, kernel, dilation)).output(0)


def _se_res2net(x, w, prefix, cin, cout, scale, se_channels, kernel, dilation) -> ov.Output:
    residual = x
    x = _tdnn(x, w, f"{prefix}.tdnn1", cin, cout, 1, 1)
    # Res2Net: chunk 0 passes through, chunk 1 is convolved, each later chunk is convolved with the previous output.
    parts = op.split(x, ints(1), scale).outputs()
    width = cout // scale
    out, previous = [parts[0]], None
    for i in range(1, scale):
        part = parts[i] if previous is None else op.add(parts[i], previous).output(0)
        previous = _tdnn(part, w, f"{prefix}.res2net_block.blocks.{i - 1}", width, width, kernel, dilation)
        out.append(previous)
    x = _tdnn(op.concat(out, 1).output(0), w, f"{prefix}.tdnn2", cout, cout, 1, 1)
    # Squeeze-excitation: a per-channel gate from the time average.
    gate = op.reduce_mean(x, ints([2]), True).output(0)
    gate = op.relu(_conv(gate, w, f"{prefix}.se_block.conv1", cout, se_channels, 1, 1)).output(0)
    gate = op.sigmoid(_conv(gate, w, f"{prefix}.se_block.conv2", se_channels, cout, 1, 1)).output(0)
    return op.add(op.multiply(x, gate), residual).output(0)


def _statistics(x: ov.Output, weights: ov.Output | None) -> tuple[ov.Output, ov.Output]:
    """Weighted mean and std over time (weights None: uniform), the std's variance floored at 1e-12."""
    if weights is None:
        mean = op.reduce_mean(x, ints([2]), True).output(0)
        variance = op.reduce_mean(op.power(op.subtract(x, mean), scalar(2.0)), ints([2]), True).output(0)
    else:
        mean = op.reduce_sum(op.multiply(x, weights), ints([2]), True).output(0)
        squares = op.multiply(op.power(op.subtract(x, mean), scalar(2.0)), weights)
        variance = op.reduce_sum(squares, ints([2]), True).output(0)
    return mean, op.sqrt(op.maximum(variance, scalar(_EPS))).output(0)


def _attentive_pooling(x: ov.Output, w: Weights, prefix: str, channels: int, attention: int) -> ov.Output:
    mean, std = _statistics(x, None)
    shape = op.shape_of(x).output(0)
    context = op.concat([x, op.broadcast(mean, shape), op.broadcast(std, shape)], 1).output(0)
    scores = _tdnn(context, w, f"{prefix}.tdnn", channels * 3, attention, 1, 1)
    scores = _conv(op.tanh(scores).output(0), w, f"{prefix}.conv", attention, channels, 1, 1)
    mean, std = _statistics(x, op.softmax(scores, 2).output(0))
    return op.concat([mean, std], 1).output(0)


def speaker_encoder_shapes(config: Mapping) -> dict[str, tuple[int, ...]]:
    """Every `speaker_encoder.*` tensor name and shape `config` implies (the exporter checks them up front)."""
    config = {**DEFAULTS, **config}
    channels, kernels = list(config["enc_channels"]), list(config["enc_kernel_sizes"])
    scale, se = int(config["enc_res2net_scale"]), int(config["enc_se_channels"])
    attention, mel_dim = int(config["enc_attention_channels"]), int(config["mel_dim"])
    shapes: dict[str, tuple[int, ...]] = {}

    def conv(prefix: str, cin: int, cout: int, kernel: int) -> None:
        shapes[f"{_PREFIX}.{prefix}.weight"], shapes[f"{_PREFIX}.{prefix}.bias"] = (cout, cin, kernel), (cout,)

    conv("blocks.0.conv", mel_dim, channels[0], kernels[0])
    for i in range(1, len(channels) - 1):
        cin, cout, width = channels[i - 1], channels[i], channels[i] // scale
        conv(f"blocks.{i}.tdnn1.conv", cin, cout, 1)
        for j in range(scale - 1):
            conv(f"blocks.{i}.res2net_block.blocks.{j}.conv", width, width, kernels[i])
        conv(f"blocks.{i}.tdnn2.conv", cout, cout, 1)
        conv(f"blocks.{i}.se_block.conv1", cout, se, 1)
        conv(f"blocks.{i}.se_block.conv2", se, cout, 1)
    conv("mfa.conv", channels[-1], channels[-1], kernels[-1])
    conv("asp.tdnn.conv", channels[-1] * 3, attention, 1)
    conv("asp.conv", attention, channels[-1], 1)
    conv("fc", channels[-1] * 2, int(config["enc_dim"]), 1)
    return shapes
