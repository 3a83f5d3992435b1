"""The Qwen3-TTS-Tokenizer-12Hz encoder as an OpenVINO graph: 24 kHz audio [1, 1, S] -> codes [1, Q, T].

It follows the reference's `Qwen3TTSTokenizerV2Model.encode`, which is transformers' MimiModel encoder keeping the
first `encoder_valid_num_quantizers` (16) codebooks:

    audio -> SEANet conv encoder (causal convs, ELU, residual blocks, strided downsampling convs)
          -> encoder transformer (LayerNorm, causal sliding-window attention with RoPE, GELU MLP, LayerScale)
          -> downsample conv (stride 2, replicate padding)
          -> split RVQ encode: the semantic RVQ (first codebook) and the acoustic RVQ (the rest) each project the
             embedding, then pick the nearest codebook entry of the running residual, codebook after codebook

Every conv pads as MimiConv1d does for a causal conv: (effective kernel - stride) on the left, and on the right
whatever makes the length a multiple of the stride, so T = ceil(S / 1920). The whole clip is encoded in one call
(the encoder only runs on reference clips), so there is no state.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset13 as op

from wyoming_chorus.graphs.attention import apply_rope, merge_heads, repeat_kv, rope_tables, split_heads, to_bhsd
from wyoming_chorus.graphs.ops import Weights, constant, dim, ints, linear, named_input, named_output, scalar

_CODEBOOK_EPS = 1e-5  # MimiEuclideanCodebook's epsilon for cluster_usage
_PREFIX = "encoder."
# MimiConfig's defaults, for an encoder_config that leaves a key out (as the reference would read it).
DEFAULTS = {"kernel_size": 7, "last_kernel_size": 3, "residual_kernel_size": 3, "dilation_growth_rate": 2,
            "num_residual_layers": 1, "upsampling_ratios": [8, 6, 5, 4], "hidden_size": 512, "num_hidden_layers": 8,
            "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": None, "norm_eps": 1e-5,
            "rope_theta": 10000.0, "sliding_window": 250, "intermediate_size": 2048, "num_semantic_quantizers": 1}


def build_codec_encoder(weights: Mapping[str, np.ndarray], codec_config: Mapping) -> ov.Model:
    """Input "audio" f32 [1, 1, S] at 24 kHz, output "codes" i64 [1, encoder_valid_num_quantizers, ceil(S / 1920)].

    weights are keyed as in speech_tokenizer/model.safetensors ("encoder.*"); codec_config is its config.json.
    """
    config = {**DEFAULTS, **(codec_config.get("encoder_config") or {})}
    unsupported = [f"{key}={config.get(key)!r}" for key, wanted in
                   (("use_causal_conv", True), ("pad_mode", "constant"), ("use_conv_shortcut", False),
                    ("hidden_act", "gelu"), ("attention_bias", False)) if config.get(key, wanted) != wanted]
    if unsupported:
        raise ValueError(f"the codec encoder config has {', '.join(unsupported)}, which is not supported")
    valid = int(codec_config.get("encoder_valid_num_quantizers", 16))
    return _EncoderGraph(Weights(weights), config, valid).build()


class _EncoderGraph:
    def __init__(self, weights: Weights, config: dict, valid_quantizers: int):
        self.w = weights
        self.config = config
        self.valid = valid_quantizers
        self.hidden = int(config["hidden_size"])
        self.num_heads = int(config["num_attention_heads"])
        self.num_kv_heads = int(config["num_key_value_heads"] or self.num_heads)
        self.head_dim = int(config.get("head_dim") or self.hidden // self.num_heads)

    def array(self, key: str) -> np.ndarray:
        return self.w.array(_PREFIX + key).astype(np.float32)

    def has(self, key: str) -> bool:
        try:
            self.w.array(_PREFIX + key)
        except ValueError:
            return False
        return True

    def build(self) -> ov.Model:
        c = self.config
        audio = named_input("audio", ov.Type.f32, [1, 1, -1])
        x = self.conv(audio.output(0), "encoder.layers.0", int(c["kernel_size"]))
        index = 1
        for ratio in reversed(c["upsampling_ratios"]):
            for j in range(int(c["num_residual_layers"])):
                x = self.resnet_block(x, f"encoder.layers.{index}", int(c["dilation_growth_rate"]) ** j)
                index += 1
            x = self.conv(op.elu(x, 1.0).output(0), f"encoder.layers.{index + 1}", 2 * int(ratio), stride=int(ratio))
            index += 2
        x = self.conv(op.elu(x, 1.0).output(0), f"encoder.layers.{index + 1}", int(c["last_kernel_size"]))
        x = op.transpose(x, ints([0, 2, 1])).output(0)  # [1, T, C]
        for layer in range(int(c["num_hidden_layers"])):
            x = self.transformer_layer(x, f"encoder_transformer.layers.{layer}")
        x = op.transpose(x, ints([0, 2, 1])).output(0)
        kernel = self.w.array(_PREFIX + "downsample.conv.weight").shape[-1]
        x = self.conv(x, "downsample", kernel, stride=2, mode="edge", bias=False)
        semantic = int(c["num_semantic_quantizers"])
        codes = self.rvq(x, "quantizer.semantic_residual_vector_quantizer", semantic)
        if self.valid > semantic:
            codes += self.rvq(x, "quantizer.acoustic_residual_vector_quantizer", self.valid - semantic)
        codes = op.concat(codes, 1).output(0)  # [1, Q, T]
        return ov.Model([named_output(codes, "codes")], [audio], "codec_encoder")

    # ---- convolutions (layout [1, C, T]) -------------------------------------------------------------------
    def conv(self, x: ov.Output, prefix: str, kernel: int, stride: int = 1, dilation: int = 1,
             mode: str = "constant", bias: bool = True) -> ov.Output:
        """MimiConv1d, causal: left padding (k_eff - stride), right padding up to a multiple of the stride."""
        weight = self.array(f"{prefix}.conv.weight")
        if weight.shape[-1] != kernel:
            raise ValueError(f"tensor {_PREFIX}{prefix}.conv.weight has kernel {weight.shape[-1]}, the config "
                             f"implies {kernel}")
        left = (kernel - 1) * dilation + 1 - stride
        if stride > 1:  # (stride - S mod stride) mod stride
            length = dim(x, 2)
            right = op.mod(op.subtract(ints([stride]), op.mod(length, ints([stride]))), ints([stride]))
            ends = op.concat([ints([0, 0]), right], 0).output(0)
        else:
            ends = ints([0, 0, 0])
        x = op.pad(x, ints([0, 0, left]), ends, mode, scalar(0.0) if mode == "constant" else None).output(0)
        y = op.convolution(x, constant(weight), [stride], [0], [0], [dilation]).output(0)
        if bias:
            y = op.add(y, constant(self.array(f"{prefix}.conv.bias").reshape(1, -1, 1))).output(0)
        return y

    def resnet_block(self, x: ov.Output, prefix: str, dilation: int) -> ov.Output:
        y = self.conv(op.elu(x, 1.0).output(0), f"{prefix}.block.1", int(self.config["residual_kernel_size"]),
                      dilation=dilation)
        y = self.conv(op.elu(y, 1.0).output(0), f"{prefix}.block.3", 1)
        return op.add(x, y).output(0)

    # ---- transformer (layout [1, T, C]) --------------------------------------------------------------------
    def layer_norm(self, x: ov.Output, prefix: str) -> ov.Output:
        y = op.mvn(x, ints([-1]), True, float(self.config["norm_eps"]), "inside_sqrt")
        return op.add(op.multiply(y, constant(self.array(prefix + ".weight"))),
                      constant(self.array(prefix + ".bias"))).output(0)

    def transformer_layer(self, x: ov.Output, prefix: str) -> ov.Output:
        hidden, heads, kv_heads, head_dim = self.hidden, self.num_heads, self.num_kv_heads, self.head_dim
        # positions, RoPE tables and the causal sliding-window mask (rebuilt per layer; constant-folded or cheap)
        positions = op.range(ints(0), op.squeeze(dim(x, 1), ints([0])), ints(1), "i64").output(0)
        cos, sin = (op.unsqueeze(t, ints([0, 1])).output(0)  # [1, 1, T, D]
                    for t in rope_tables(positions, head_dim, self.config["rope_theta"]))
        query_pos = op.unsqueeze(positions, ints([1]))
        key_pos = op.unsqueeze(positions, ints([0]))
        allowed = op.less_equal(key_pos, query_pos)
        window = self.config.get("sliding_window")
        if window:
            allowed = op.logical_and(allowed, op.greater(key_pos, op.subtract(query_pos, ints(int(window)))))
        mask = op.select(allowed, scalar(0.0), scalar(float(np.finfo(np.float32).min))).output(0)

        residual = x
        y = self.layer_norm(x, f"{prefix}.input_layernorm")
        attn = f"{_PREFIX}{prefix}.self_attn"
        def heads_of(name: str, count: int) -> ov.Output:  # [1, count, T, D]
            return to_bhsd(split_heads(linear(y, self.w, f"{attn}.{name}", count * head_dim, hidden), count, head_dim))

        q = apply_rope(heads_of("q_proj", heads), cos, sin, head_dim)
        k = repeat_kv(apply_rope(heads_of("k_proj", kv_heads), cos, sin, head_dim), heads, kv_heads, head_dim)
        v = repeat_kv(heads_of("v_proj", kv_heads), heads, kv_heads, head_dim)
        scores = op.multiply(op.matmul(q, k, False, True), scalar(1 / math.sqrt(head_dim)))
        probs = op.softmax(op.add(scores, mask), -1)
        context = op.matmul(probs, v, False, False).output(0)
        y = linear(merge_heads(context, heads, head_dim), self.w, f"{attn}.o_proj", hidden, heads * head_dim)
        x = op.add(residual, op.multiply(y, constant(self.array(f"{prefix}.self_attn_layer_scale.scale")))).output(0)

        residual = x
        y = self.layer_norm(x, f"{prefix}.post_attention_layernorm")
        intermediate = int(self.config["intermediate_size"])
        y = op.gelu(linear(y, self.w, f"{_PREFIX}{prefix}.mlp.fc1", intermediate, hidden), "erf").output(0)
        y = linear(y, self.w, f"{_PREFIX}{prefix}.mlp.fc2", hidden, intermediate)
        return op.add(residual, op.multiply(y, constant(self.array(f"{prefix}.mlp_layer_scale.scale")))).output(0)

    # ---- quantizer -----------------------------------------------------------------------------------------
    def rvq(self, x: ov.Output, prefix: str, count: int) -> list[ov.Output]:
        """MimiResidualVectorQuantizer.encode of the first `count` codebooks: i64 [1, 1, T] codes each."""
        if self.has(prefix + ".input_proj.weight"):
            projection = self.array(prefix + ".input_proj.weight")[:, :, 0]  # bias-free 1x1 conv
            x = op.matmul(constant(projection), x, False, False).output(0)
        residual = op.transpose(x, ints([0, 2, 1])).output(0)  # [1, T, D]
        codes = []
        for i in range(count):
            layer = f"{prefix}.layers.{i}.codebook"
            usage = np.maximum(self.array(layer + ".cluster_usage"), np.float32(_CODEBOOK_EPS))
            embed = self.array(layer + ".embed_sum") / usage[:, None]  # [N, D]
            # argmin of the distance = argmin of |e|^2 - 2 x.e (|x|^2 is the same for every entry)
            scores = op.subtract(constant((embed * embed).sum(1)[None, None, :]),
                                 op.multiply(op.matmul(residual, constant(embed), False, True), scalar(2.0)))
            index = op.topk(scores, ints(1), -1, "min", "none", "i64").output(1)  # [1, T, 1]
            chosen = op.gather(constant(embed), op.squeeze(index, ints([2])), ints(0))  # [1, T, D]
            residual = op.subtract(residual, chosen).output(0)
            codes.append(op.transpose(index, ints([0, 2, 1])).output(0))
        return codes
