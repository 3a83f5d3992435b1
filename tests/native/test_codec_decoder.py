"""The codec decoder graph against an independent numpy reference, its causality, and streaming == full decode.

The numpy reference below is written from the reference PyTorch forward (Qwen3TTSTokenizerV2Decoder), in float64,
without any of the graph builder's code; its own conv helpers are checked against textbook definitions first.
"""

import math

import numpy as np
import openvino as ov
import pytest

from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder
from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
from wyoming_chorus.graphs.codec_decoder import build_codec_decoder

CONFIG = CODEC_PRESETS["tiny"]
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


# ---- numpy reference ---------------------------------------------------------------------------------------------
def causal_conv(x, weight, bias, dilation=1, groups=1):
    """x [C_in, T]; weight [C_out, C_in / groups, k]; zeros on the left, output length T."""
    out_ch, _, kernel = weight.shape
    pad = (kernel - 1) * dilation
    xp = np.concatenate([np.zeros((x.shape[0], pad)), x], axis=1)
    length = x.shape[1]
    y = np.zeros((out_ch, length))
    for j in range(kernel):
        window = xp[:, j * dilation: j * dilation + length]
        y += weight[:, :, j] @ window if groups == 1 else weight[:, 0, j, None] * window
    return y + bias[:, None]


def causal_transposed_conv(x, weight, bias, stride):
    """x [C_in, T]; weight [C_in, C_out, k]; ConvTranspose1d then the right (k - stride) samples dropped."""
    _, out_ch, kernel = weight.shape
    length = x.shape[1]
    y = np.zeros((out_ch, (length - 1) * stride + kernel))
    for j in range(kernel):
        y[:, j: j + stride * length: stride] += weight[:, :, j].T @ x
    return y[:, : length * stride] + bias[:, None]


def snake_beta(x, alpha, beta):
    return x + 1.0 / (np.exp(beta)[:, None] + 1e-9) * np.sin(x * np.exp(alpha)[:, None]) ** 2


def rms_norm(x, weight, eps):
    return weight * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def reference_decode(w, c, codes):
    """codes [Q, T] -> audio [T * 1920], following the reference forward op by op."""
    w = {k[len("decoder."):]: v.astype(np.float64) for k, v in w.items()}

    def codebook(prefix):
        usage = np.maximum(w[prefix + "._codebook.cluster_usage"], 1e-5)
        return w[prefix + "._codebook.embedding_sum"] / usage[:, None]

    first = codebook("quantizer.rvq_first.vq.layers.0")[codes[0]]
    rest = sum(codebook(f"quantizer.rvq_rest.vq.layers.{i}")[codes[i + 1]] for i in range(len(codes) - 1))
    x = (w["quantizer.rvq_first.output_proj.weight"][:, :, 0] @ first.T
         + w["quantizer.rvq_rest.output_proj.weight"][:, :, 0] @ rest.T)  # [codebook_dim, T]
    x = causal_conv(x, w["pre_conv.conv.weight"], w["pre_conv.conv.bias"]).T  # [T, latent]

    t = "pre_transformer."
    heads, dim, length = c["num_attention_heads"], c["head_dim"], x.shape[0]
    x = x @ w[t + "input_proj.weight"].T + w[t + "input_proj.bias"]
    inv_freq = 1.0 / c["rope_theta"] ** (np.arange(0, dim, 2) / dim)
    angles = np.concatenate([np.outer(np.arange(length), inv_freq)] * 2, axis=1)
    pos = np.arange(length)
    visible = (pos[None, :] <= pos[:, None]) & (pos[None, :] > pos[:, None] - c["sliding_window"])

    def rope(v):  # [H, T, D]
        rotated = np.concatenate([-v[..., dim // 2:], v[..., : dim // 2]], axis=-1)
        return v * np.cos(angles) + rotated * np.sin(angles)

    for i in range(c["num_hidden_layers"]):
        p = f"{t}layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], c["rms_norm_eps"])
        q, k, v = ((h @ w[f"{p}self_attn.{n}_proj.weight"].T).reshape(length, heads, dim).transpose(1, 0, 2)
                   for n in "qkv")
        q, k = rope(q), rope(k)
        scores = np.where(visible, q @ k.transpose(0, 2, 1) / math.sqrt(dim), -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        attn = (probs / probs.sum(-1, keepdims=True) @ v).transpose(1, 0, 2).reshape(length, heads * dim)
        x = x + w[p + "self_attn_layer_scale.scale"] * (attn @ w[p + "self_attn.o_proj.weight"].T)
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c["rms_norm_eps"])
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        mlp = (gate / (1 + np.exp(-gate)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        x = x + w[p + "mlp_layer_scale.scale"] * mlp
    x = rms_norm(x, w[t + "norm.weight"], c["rms_norm_eps"])
    x = (x @ w[t + "output_proj.weight"].T + w[t + "output_proj.bias"]).T  # [latent, T]

    for i, factor in enumerate(c["upsampling_ratios"]):
        u = f"upsample.{i}."
        x = causal_transposed_conv(x, w[u + "0.conv.weight"], w[u + "0.conv.bias"], factor)
        y = causal_conv(x, w[u + "1.dwconv.conv.weight"], w[u + "1.dwconv.conv.bias"], groups=x.shape[0]).T
        y = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-6)
        y = y * w[u + "1.norm.weight"] + w[u + "1.norm.bias"]
        y = gelu(y @ w[u + "1.pwconv1.weight"].T + w[u + "1.pwconv1.bias"])
        y = y @ w[u + "1.pwconv2.weight"].T + w[u + "1.pwconv2.bias"]
        x = x + (w[u + "1.gamma"] * y).T

    x = causal_conv(x, w["decoder.0.conv.weight"], w["decoder.0.conv.bias"])
    rates = c["upsample_rates"]
    for b, rate in enumerate(rates, start=1):
        p = f"decoder.{b}.block."
        x = snake_beta(x, w[p + "0.alpha"], w[p + "0.beta"])
        x = causal_transposed_conv(x, w[p + "1.conv.weight"], w[p + "1.conv.bias"], rate)
        for unit, dilation in zip((2, 3, 4), (1, 3, 9), strict=True):
            r = f"{p}{unit}."
            y = snake_beta(x, w[r + "act1.alpha"], w[r + "act1.beta"])
            y = causal_conv(y, w[r + "conv1.conv.weight"], w[r + "conv1.conv.bias"], dilation)
            y = snake_beta(y, w[r + "act2.alpha"], w[r + "act2.beta"])
            x = x + causal_conv(y, w[r + "conv2.conv.weight"], w[r + "conv2.conv.bias"])
    n = len(rates)
    x = snake_beta(x, w[f"decoder.{n + 1}.alpha"], w[f"decoder.{n + 1}.beta"])
    x = causal_conv(x, w[f"decoder.{n + 2}.conv.weight"], w[f"decoder.{n + 2}.conv.bias"])
    return np.clip(x[0], -1.0, 1.0)


# ---- fixtures ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def weights():
    return random_codec_decoder_weights(CONFIG, np.random.default_rng(0))


@pytest.fixture(scope="module")
def full_decoder(weights):
    return ov.Core().compile_model(build_codec_decoder(weights, CONFIG, stateful=False), "CPU", F32)


def random_codes(frames, seed=1):
    return np.random.default_rng(seed).integers(0, CONFIG["codebook_size"], (1, CONFIG["num_quantizers"], frames))


def decode(compiled, codes):
    return compiled(codes)["audio"][0, 0].copy()


# ---- the reference's building blocks against textbook definitions ------------------------------------------------
def test_reference_conv_helpers_match_definitions():
    rng = np.random.default_rng(3)
    x, weight, bias = rng.standard_normal((3, 20)), rng.standard_normal((2, 3, 4)), rng.standard_normal(2)
    # Causal conv, dilation 2: y[o, t] = b[o] + sum_i sum_j w[o, i, j] x[i, t - (k - 1 - j) * d] (zero before 0).
    expected = np.array([[bias[o] + sum(weight[o, i, j] * x[i, t - (3 - j) * 2]
                                        for i in range(3) for j in range(4) if t - (3 - j) * 2 >= 0)
                          for t in range(20)] for o in range(2)])
    np.testing.assert_allclose(causal_conv(x, weight, bias, dilation=2), expected, atol=1e-12)
    # Transposed conv (k=6, stride 3): input step t adds w[:, :, j] x[:, t] at output 3t + j; keep 3T samples.
    weight = rng.standard_normal((3, 2, 6))
    full = np.zeros((2, 19 * 3 + 6))
    for t in range(20):
        for j in range(6):
            full[:, 3 * t + j] += weight[:, :, j].T @ x[:, t]
    np.testing.assert_allclose(causal_transposed_conv(x, weight, bias, 3), full[:, :60] + bias[:, None], atol=1e-12)


# ---- the graph ---------------------------------------------------------------------------------------------------
def test_output_shape_range_and_loudness(full_decoder):
    audio = decode(full_decoder, random_codes(20))
    assert audio.shape == (20 * 1920,)
    assert np.abs(audio).max() <= 1.0
    rms = float(np.sqrt(np.mean(audio ** 2)))
    assert 0.03 < rms < 0.5, rms
    assert np.mean(np.abs(audio) >= 1.0) < 0.01  # not clipped everywhere


def test_graph_matches_numpy_reference(weights, full_decoder):
    # 80 frames: more than one attention window, so the sliding-window mask matters.
    codes = random_codes(80, seed=4)
    expected = reference_decode(weights, CONFIG, codes[0])
    got = decode(full_decoder, codes)
    assert np.abs(got - expected).max() < 1e-4


def test_prefix_decodes_to_prefix_of_full_decode(full_decoder):
    codes = random_codes(100, seed=5)
    full = decode(full_decoder, codes)
    for frames in (1, 37, 73):
        prefix = decode(full_decoder, codes[:, :, :frames])
        assert np.abs(prefix - full[: frames * 1920]).max() < 1e-5


def test_stateful_graph_decodes_a_whole_utterance_in_one_call(weights, full_decoder):
    # The contract's codec_decoder.xml use: a fresh infer request, all frames at once (dynamic frame count).
    codes = random_codes(40, seed=9)
    request = ov.Core().compile_model(build_codec_decoder(weights, CONFIG), "CPU", F32).create_infer_request()
    request.infer({"codes": codes})
    np.testing.assert_allclose(request.get_output_tensor(0).data[0, 0], decode(full_decoder, codes), atol=1e-5)


@pytest.fixture(scope="module")
def streaming_decoder(weights):
    return StreamingCodecDecoder(build_codec_decoder(weights, CONFIG), inference_precision="f32")


@pytest.mark.parametrize("chunk", [1, 3, 8, 150])
def test_streaming_equals_full_decode(full_decoder, streaming_decoder, chunk):
    # 150 frames: twice the attention window, so the carried keys and values matter.
    codes = random_codes(150, seed=6)
    full = decode(full_decoder, codes)
    stream = streaming_decoder.new_stream()
    pieces = [streaming_decoder.push(stream, codes[0, :, start: start + chunk].T) for start in range(0, 150, chunk)]
    streamed = np.concatenate(pieces)
    assert streamed.shape == full.shape
    assert np.abs(streamed - full).max() < 1e-4  # exact up to float rounding (~1e-6 seen)


def test_streams_are_independent(streaming_decoder):
    # Interleaved pushes of two utterances give each the audio it would get alone.
    codes = [random_codes(20, seed=7)[0].T, random_codes(20, seed=8)[0].T]
    alone = [np.concatenate([streaming_decoder.push(s, c[i: i + 5]) for i in range(0, 20, 5)])
             for s, c in ((streaming_decoder.new_stream(), c) for c in codes)]
    streams = [streaming_decoder.new_stream(), streaming_decoder.new_stream()]
    mixed = [[], []]
    for i in range(0, 20, 5):
        for k in (0, 1):
            mixed[k].append(streaming_decoder.push(streams[k], codes[k][i: i + 5]))
    for k in (0, 1):
        np.testing.assert_array_equal(np.concatenate(mixed[k]), alone[k])


def test_push_rejects_codes_of_the_wrong_shape(streaming_decoder):
    with pytest.raises(ValueError, match="codes must be"):
        streaming_decoder.push(streaming_decoder.new_stream(), np.zeros((4, 15), np.int64))


def test_a_stateless_graph_cannot_stream(weights):
    with pytest.raises(ValueError, match="stateless"):
        StreamingCodecDecoder(build_codec_decoder(weights, CONFIG, stateful=False))


def test_a_stream_started_from_a_snapshot_continues_as_the_original_would(streaming_decoder):
    """A cloned voice's clip codes are decoded once: later requests start from the state after them."""
    clip, first, second = random_codes(30, seed=7)[0].T, random_codes(20, seed=8)[0].T, random_codes(20, seed=9)[0].T
    primed = streaming_decoder.new_stream()
    streaming_decoder.push(primed, clip)
    snapshot = streaming_decoder.snapshot(primed)
    expected = streaming_decoder.push(primed, first)
    again = streaming_decoder.stream_from(snapshot)
    np.testing.assert_array_equal(streaming_decoder.push(again, first), expected)
    # The snapshot is a copy: a second stream from it is not moved on by the first one.
    other = streaming_decoder.stream_from(snapshot)
    fresh = streaming_decoder.new_stream()
    streaming_decoder.push(fresh, clip)
    np.testing.assert_array_equal(streaming_decoder.push(other, second), streaming_decoder.push(fresh, second))
    assert not np.array_equal(streaming_decoder.push(streaming_decoder.new_stream(), first), expected)
