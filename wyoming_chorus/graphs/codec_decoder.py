"""The Qwen3-TTS-Tokenizer-12Hz decoder as an OpenVINO graph: codes [1, 16, T] -> 24 kHz audio [1, 1, T * 1920].

It follows `Qwen3TTSTokenizerV2Decoder.forward` of the reference step by step:

    codes -> split RVQ decode (1 semantic + 15 acoustic codebooks, each group summed then projected)
          -> pre_conv (causal, k=3) -> pre_transformer (sliding-window attention, RoPE, LayerScale, SwiGLU)
          -> upsample x2 x2 (causal transposed conv + ConvNeXt) -> decoder conv (k=7)
          -> 4 blocks (SnakeBeta, causal transposed conv x8 x5 x4 x3, residual units with dilation 1, 3, 9)
          -> SnakeBeta -> conv (k=7) -> clamp [-1, 1]

Every op is causal, so the graph can stream. By default it is stateful: each causal op takes its left context
(the tail of each conv input, the overlap column of each transposed conv, the last `sliding_window - 1` keys and
values of each attention layer, the frame count) from OpenVINO state variables. A fresh infer request (or one after
reset_state()) starts from zeros, which is exactly the reference's zero padding, so one call with all T frames is
the whole-utterance decode, and calls with consecutive chunks of frames on the same request produce the same audio
(to float rounding). One infer request = one utterance. With stateful=False every call starts from zeros (plain
zero padding and no state): the stateless form, for callers that decode whole utterances with any request.

Two ops are built differently from the reference for speed on the CPU plugin, with the same math: SnakeBeta's sine
(a polynomial after range reduction, see sin_squared.py) and the transposed convs (their polyphase form).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import openvino as ov
import openvino.opset15 as ops

from wyoming_chorus.graphs.attention import apply_rope, merge_heads, repeat_kv, rope_tables, split_heads, to_bhsd
from wyoming_chorus.graphs.ops import Weights, linear, named_input, named_output, rms_norm, silu
from wyoming_chorus.graphs.sin_squared import sin_squared

_SNAKE_EPS = 1e-9  # SnakeBeta's no_div_by_zero
_CODEBOOK_EPS = 1e-5  # EuclideanCodebook's epsilon for cluster_usage
_LAYER_NORM_EPS = 1e-6  # ConvNeXt LayerNorm
_RESIDUAL_DILATIONS = (1, 3, 9)


def build_codec_decoder(
    weights: Mapping[str, np.ndarray], decoder_config: dict, stateful: bool = True
) -> ov.Model:
    """Input "codes" i64 [1, num_quantizers, T], output "audio" f32 [1, 1, T * 1920] in [-1, 1].

    weights are keyed as in speech_tokenizer/model.safetensors ("decoder.*"); decoder_config is the
    "decoder_config" dict of its config.json. stateful: see the module doc.
    """
    return _DecoderGraph(weights, decoder_config, stateful).build()


class _DecoderGraph:
    def __init__(self, weights: Mapping[str, np.ndarray], config: dict, stateful: bool):
        self.weights = Weights(weights)
        self.config = config
        self.stateful = stateful
        self.hidden = config["hidden_size"]
        self.latent = config["latent_dim"]
        self.num_heads = config["num_attention_heads"]
        self.num_kv_heads = config["num_key_value_heads"]
        self.head_dim = config.get("head_dim") or self.hidden // self.num_heads
        self.sinks: list[ov.Node] = []  # Assign nodes of the stateful model
        self.codes = named_input("codes", ov.Type.i64, [1, config["num_quantizers"], -1])
        codes = self.codes.output(0)
        self.frames = ops.gather(ops.shape_of(codes), [2], 0).output(0)  # T, i64 [1]
        # Trailing frames whose codebook-0 code is -1 are padding (the reference decode's convention): they decode
        # as code 0, their audio is meaningless, and they leave the state as it was. A caller of a graph compiled
        # for a fixed frame count pads short chunks this way.
        valid = ops.convert(ops.greater_equal(ops.gather(codes, [0], 1), np.int64(0)), ov.Type.i64)
        self.valid_frames = ops.reduce_sum(valid, [1, 2]).output(0)  # i64 [1]

    # ---- plumbing ------------------------------------------------------------------------------------------
    def weight(self, name: str) -> np.ndarray:
        return self.weights.array("decoder." + name).astype(np.float32)

    def const(self, name: str, shape: tuple[int, ...] | None = None) -> ov.Node:
        value = self.weight(name)
        return ops.constant(value if shape is None else value.reshape(shape))

    def state(self, name: str, initial: np.ndarray) -> tuple[ov.Output, ov.op.util.Variable]:
        info = ov.op.util.VariableInfo()
        info.variable_id = name
        info.data_shape = ov.PartialShape(list(initial.shape))
        info.data_type = ov.Type(initial.dtype)
        variable = ov.op.util.Variable(info)
        return ops.read_value(ops.constant(initial), variable).output(0), variable

    def history(self, name: str, x: ov.Output, length: int, axis: int = 2) -> ov.Output:
        """x with the `length` steps that precede it along `axis` prepended (zeros before the first frame)."""
        if length == 0:
            return x
        shape = x.get_partial_shape()
        if not self.stateful:
            pads = [0] * shape.rank.get_length()
            before = list(pads)
            before[axis] = length
            return ops.pad(x, before, pads, "constant", 0.0).output(0)
        tail_shape = [length if i == axis else d.get_length() for i, d in enumerate(shape)]
        past, variable = self.state(name, np.zeros(tail_shape, np.float32))
        joined = ops.concat([past, x], axis).output(0)
        # The new tail ends with the last valid frame's steps: padding frames leave no trace in the state.
        steps_per_frame = ops.divide(ops.gather(ops.shape_of(x), [axis], 0), self.frames)
        end = ops.multiply(self.valid_frames, steps_per_frame)
        tail = ops.slice(joined, end, ops.add(end, np.int64(length)), [1], [axis])
        self.sinks.append(ops.assign(tail, variable))
        return joined

    # ---- convolutions (layout [1, C, T]) -------------------------------------------------------------------
    def causal_conv(self, x: ov.Output, prefix: str, dilation: int = 1, depthwise: bool = False) -> ov.Output:
        """Reference CausalConvNet with stride 1: left context of (k-1)*dilation, output length = input length."""
        weight = self.weight(prefix + ".weight")
        out_channels, _, kernel = weight.shape
        padded = self.history(prefix, x, (kernel - 1) * dilation)
        if depthwise:
            y = ops.group_convolution(padded, ops.constant(weight.reshape(out_channels, 1, 1, kernel)),
                                      [1], [0], [0], [dilation])
        else:
            y = ops.convolution(padded, ops.constant(weight), [1], [0], [0], [dilation])
        return ops.add(y, self.const(prefix + ".bias", (1, out_channels, 1))).output(0)

    def causal_transposed_conv(self, x: ov.Output, prefix: str, stride: int) -> ov.Output:
        """Reference CausalTransConvNet: ConvTranspose1d with the right overhang dropped, T steps in, T*stride out.

        Built as its polyphase equivalent, an ordinary causal conv to stride * C_out channels whose phases are then
        interleaved in time (the CPU plugin's ConvolutionBackpropData kernel was 2-5x slower). Output sample
        t*stride + p sums w[:, :, p + d*stride] . x[t - d] over d < taps = ceil(k / stride): the conv's tap
        (taps - 1 - d) carries that slice of the kernel. The interleave is one DepthToSpace (channel o * stride + p
        to step t * stride + p), which the plugin runs in the convolutions' own channel-last layout; as a Reshape,
        Transpose and Reshape it cost a Transpose and two layout Reorders at every upsampling (0.6b codec, 4-frame
        blocks, the same audio to the bit in f32: 0.95x the INT8 twin's time on 2 Zen 4 cores).
        """
        weight = self.weight(prefix + ".weight")  # [C_in, C_out, k]
        in_channels, out_channels, kernel = weight.shape
        taps = math.ceil(kernel / stride)
        padded = np.zeros((in_channels, out_channels, taps * stride), np.float32)
        padded[:, :, :kernel] = weight
        phases = padded.reshape(in_channels, out_channels, taps, stride)[:, :, ::-1]  # [C_in, C_out, tap, p]
        filters = phases.transpose(1, 3, 0, 2).reshape(out_channels * stride, in_channels, taps)
        y = ops.convolution(self.history(prefix, x, taps - 1), ops.constant(np.ascontiguousarray(filters)),
                            [1], [0], [0], [1])  # [1, C_out * stride, T], channel o * stride + p
        y = ops.depth_to_space(y, "depth_first", stride)  # [1, C_out, T * stride]: sample t * stride + p
        return ops.add(y, self.const(prefix + ".bias", (1, out_channels, 1))).output(0)

    def pointwise(self, x: ov.Output, prefix: str) -> ov.Output:
        """nn.Linear applied to the channels of a [1, C, T] tensor, as a 1x1 convolution."""
        weight = self.weight(prefix + ".weight")
        y = ops.convolution(x, ops.constant(weight[:, :, None]), [1], [0], [0], [1])
        return ops.add(y, self.const(prefix + ".bias", (1, weight.shape[0], 1))).output(0)

    def snake_beta(self, x: ov.Output, prefix: str) -> ov.Output:
        """x + sin(x * e^alpha)^2 / (e^beta + 1e-9), per channel; the exponentials are folded into constants."""
        alpha = np.exp(self.weight(prefix + ".alpha"))[None, :, None]
        inv_beta = 1.0 / (np.exp(self.weight(prefix + ".beta")) + np.float32(_SNAKE_EPS))[None, :, None]
        wave = sin_squared(ops.multiply(x, ops.constant(alpha)).output(0))
        return ops.add(x, ops.multiply(wave, ops.constant(inv_beta.astype(np.float32)))).output(0)

    def convnext(self, x: ov.Output, prefix: str) -> ov.Output:
        y = self.causal_conv(x, prefix + ".dwconv.conv", depthwise=True)
        y = ops.mvn(y, ops.constant([1]), True, _LAYER_NORM_EPS, "inside_sqrt")  # LayerNorm over channels
        channels = self.weight(prefix + ".gamma").shape[0]
        y = ops.add(ops.multiply(y, self.const(prefix + ".norm.weight", (1, channels, 1))),
                    self.const(prefix + ".norm.bias", (1, channels, 1)))
        y = ops.gelu(self.pointwise(y.output(0), prefix + ".pwconv1"), "erf").output(0)
        y = ops.multiply(self.pointwise(y, prefix + ".pwconv2"), self.const(prefix + ".gamma", (1, channels, 1)))
        return ops.add(x, y).output(0)

    def residual_unit(self, x: ov.Output, prefix: str, dilation: int) -> ov.Output:
        y = self.causal_conv(self.snake_beta(x, prefix + ".act1"), prefix + ".conv1.conv", dilation)
        y = self.causal_conv(self.snake_beta(y, prefix + ".act2"), prefix + ".conv2.conv")
        return ops.add(x, y).output(0)

    def decoder_block(self, x: ov.Output, index: int, rate: int) -> ov.Output:
        prefix = f"decoder.{index}.block"
        x = self.snake_beta(x, prefix + ".0")
        x = self.causal_transposed_conv(x, prefix + ".1.conv", rate)
        for unit, dilation in enumerate(_RESIDUAL_DILATIONS, start=2):
            x = self.residual_unit(x, f"{prefix}.{unit}", dilation)
        return x

    # ---- quantizer -----------------------------------------------------------------------------------------
    def codebook(self, prefix: str) -> np.ndarray:
        usage = np.maximum(self.weight(prefix + "._codebook.cluster_usage"), np.float32(_CODEBOOK_EPS))
        return self.weight(prefix + "._codebook.embedding_sum") / usage[:, None]

    def quantizer(self, codes: ov.Output) -> ov.Output:
        """Split RVQ decode: [1, Q, T] codes -> [1, codebook_dim, T]; each group is summed, then projected."""
        first = ops.gather(ops.constant(self.codebook("quantizer.rvq_first.vq.layers.0")),
                           ops.gather(codes, 0, 1), 0)  # [1, T, d]
        acoustic = self.config["num_quantizers"] - 1
        tables = np.concatenate([self.codebook(f"quantizer.rvq_rest.vq.layers.{i}") for i in range(acoustic)])
        size = tables.shape[0] // acoustic
        offsets = ops.constant((np.arange(acoustic, dtype=np.int64) * size).reshape(1, acoustic, 1))
        rest_codes = ops.slice(codes, [1], [acoustic + 1], [1], [1])
        rest = ops.reduce_sum(ops.gather(ops.constant(tables), ops.add(rest_codes, offsets), 0), [1])
        projected = [  # output_proj is a bias-free 1x1 conv
            ops.matmul(group, ops.constant(self.weight(f"quantizer.{name}.output_proj.weight")[:, :, 0]), False, True)
            for name, group in (("rvq_first", first), ("rvq_rest", rest))
        ]
        return ops.transpose(ops.add(*projected), [0, 2, 1]).output(0)

    # ---- transformer (layout [1, T, C]) --------------------------------------------------------------------
    def projection(self, x: ov.Output, name: str, out_features: int, in_features: int,
                   bias: bool = False) -> ov.Output:
        return linear(x, self.weights, "decoder.pre_transformer." + name, out_features, in_features, bias)

    def norm(self, x: ov.Output, name: str) -> ov.Output:
        return rms_norm(x, self.weights, f"decoder.pre_transformer.{name}.weight", self.hidden,
                        self.config["rms_norm_eps"])

    def attention(self, x: ov.Output, layer: str, rope: tuple[ov.Output, ov.Output], mask: ov.Output) -> ov.Output:
        hidden, heads, kv_heads, dim = self.hidden, self.num_heads, self.num_kv_heads, self.head_dim
        q = apply_rope(to_bhsd(split_heads(self.projection(x, layer + ".q_proj", heads * dim, hidden), heads, dim)),
                       *rope, dim)
        k = apply_rope(to_bhsd(split_heads(self.projection(x, layer + ".k_proj", kv_heads * dim, hidden), kv_heads,
                                           dim)), *rope, dim)
        v = to_bhsd(split_heads(self.projection(x, layer + ".v_proj", kv_heads * dim, hidden), kv_heads, dim))
        k = self.history(layer + ".keys", k, self.past_keys)
        v = self.history(layer + ".values", v, self.past_keys)
        k, v = (repeat_kv(t, heads, kv_heads, dim) for t in (k, v))
        y = ops.scaled_dot_product_attention(q, k, v, mask, ops.constant(np.float32(dim ** -0.5)))
        return self.projection(merge_heads(y.output(0), heads, dim), layer + ".o_proj", hidden, heads * dim)

    def mlp(self, x: ov.Output, layer: str) -> ov.Output:
        size = self.config["intermediate_size"]
        gate = silu(self.projection(x, layer + ".gate_proj", size, self.hidden))
        hidden = ops.multiply(gate, self.projection(x, layer + ".up_proj", size, self.hidden))
        return self.projection(hidden.output(0), layer + ".down_proj", self.hidden, size)

    def window_mask(self, offset: ov.Output, length: ov.Output) -> ov.Output:
        """Boolean [T, past + T]: query at absolute position p sees keys at (p - window, p] that exist (>= 0)."""
        queries = ops.add(ops.range(0, length, 1, "i64"), offset)  # absolute positions [T]
        keys = ops.add(ops.range(-self.past_keys, length, 1, "i64"), offset)  # [past + T]
        q = ops.unsqueeze(queries, [1])
        k = ops.unsqueeze(keys, [0])
        window = self.config["sliding_window"]
        visible = ops.logical_and(ops.less_equal(k, q), ops.greater(k, ops.subtract(q, window)))
        return ops.logical_and(visible, ops.greater_equal(k, 0)).output(0)

    def transformer(self, x: ov.Output, offset: ov.Output) -> ov.Output:
        """pre_transformer: [1, T, latent] -> [1, T, latent]; offset = absolute position of the first frame."""
        length = ops.squeeze(self.frames, [0])
        cos, sin = rope_tables(ops.add(ops.range(0, length, 1, "i64"), offset).output(0), self.head_dim,
                               self.config["rope_theta"])  # [T, D]
        rope = (ops.unsqueeze(cos, [0, 1]).output(0), ops.unsqueeze(sin, [0, 1]).output(0))  # [1, 1, T, D]
        mask = self.window_mask(offset, length)
        x = self.projection(x, "input_proj", self.hidden, self.latent, bias=True)
        for i in range(self.config["num_hidden_layers"]):
            layer = f"layers.{i}"
            y = self.attention(self.norm(x, layer + ".input_layernorm"), layer + ".self_attn", rope, mask)
            x = self.layer_scaled_residual(x, y, layer + ".self_attn_layer_scale")
            y = self.mlp(self.norm(x, layer + ".post_attention_layernorm"), layer + ".mlp")
            x = self.layer_scaled_residual(x, y, layer + ".mlp_layer_scale")
        return self.projection(self.norm(x, "norm"), "output_proj", self.latent, self.hidden, bias=True)

    def layer_scaled_residual(self, x: ov.Output, y: ov.Output, name: str) -> ov.Output:
        scale = self.weights.const(f"decoder.pre_transformer.{name}.scale", (self.hidden,))
        return ops.add(x, ops.multiply(y, scale)).output(0)

    # ---- whole decoder -------------------------------------------------------------------------------------
    @property
    def past_keys(self) -> int:
        """Keys kept from earlier calls: the window minus the query's own position."""
        return self.config["sliding_window"] - 1 if self.stateful else 0

    def frame_offset(self) -> ov.Output:
        """Absolute index of the first frame of this call (always 0 for the stateless model)."""
        if not self.stateful:
            return ops.constant(np.int64(0)).output(0)
        # i32: the CPU plugin keeps no i64 state.
        count, variable = self.state("frame_offset", np.zeros([1], np.int32))
        self.sinks.append(ops.assign(ops.add(count, ops.convert(self.valid_frames, ov.Type.i32)), variable))
        return ops.convert(ops.squeeze(count, [0]), ov.Type.i64).output(0)

    def build(self) -> ov.Model:
        if self.config.get("hidden_act", "silu") != "silu":
            raise ValueError(f"unsupported codec decoder activation {self.config['hidden_act']!r}")
        codes = ops.maximum(self.codes, np.int64(0)).output(0)
        x = self.causal_conv(self.quantizer(codes), "pre_conv.conv")
        x = self.transformer(ops.transpose(x, [0, 2, 1]).output(0), self.frame_offset())
        x = ops.transpose(x, [0, 2, 1]).output(0)
        for i, factor in enumerate(self.config["upsampling_ratios"]):
            x = self.causal_transposed_conv(x, f"upsample.{i}.0.conv", factor)
            x = self.convnext(x, f"upsample.{i}.1")
        x = self.causal_conv(x, "decoder.0.conv")
        rates = self.config["upsample_rates"]
        for i, rate in enumerate(rates, start=1):
            x = self.decoder_block(x, i, rate)
        x = self.snake_beta(x, f"decoder.{len(rates) + 1}")
        x = self.causal_conv(x, f"decoder.{len(rates) + 2}.conv")
        audio = named_output(ops.clamp(x, -1.0, 1.0).output(0), "audio")
        return ov.Model([audio], self.sinks, [self.codes], "qwen3_tts_codec_decoder")
