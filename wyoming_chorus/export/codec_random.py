"""Random Qwen3-TTS-Tokenizer-12Hz decoder weights that make audible noise, for tests and benchmarks.

The reference initialisation is useless here: its codebooks start at zero (silence) and its LayerScale (0.01),
ConvNeXt gamma (1e-6) and default conv scales leave the output near silent. These weights keep every stage's
activations around unit scale, give the transformer and ConvNeXt branches a real share of the signal (so the
streaming state is exercised), and scale the last conv to an output RMS of roughly 0.1.
"""

from __future__ import annotations

import numpy as np

# Decoder configs in the HF "decoder_config" form (speech_tokenizer/config.json).
_COMMON = {
    "codebook_size": 2048,
    "num_quantizers": 16,
    "num_semantic_quantizers": 1,
    "sliding_window": 72,
    "rope_theta": 10000,
    "rms_norm_eps": 1e-5,
    "max_position_embeddings": 8000,
    "layer_scale_initial_scale": 0.01,
    "hidden_act": "silu",
    "attention_bias": False,
    "attention_dropout": 0.0,
    "upsample_rates": [8, 5, 4, 3],
    "upsampling_ratios": [2, 2],
}
CODEC_PRESETS = {
    # The shapes of the tiny checkpoint the reference classes produce (tests/data/qwen3-tts-tiny-checkpoint-keys.tsv);
    # the head split is not visible in the shapes, 4 x 8 is our choice.
    "tiny": {**_COMMON, "codebook_dim": 32, "latent_dim": 32, "hidden_size": 32, "intermediate_size": 64,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 8,
             "decoder_dim": 64, "semantic_codebook_size": 2048, "vector_quantization_hidden_dimension": 32},
    # The released Qwen3-TTS-Tokenizer-12Hz decoder (its config.json overrides several class defaults:
    # hidden 512 not 1024, intermediate 1024 not 3072, head_dim 64, codebook_dim 512).
    "real": {**_COMMON, "codebook_dim": 512, "latent_dim": 1024, "hidden_size": 512, "intermediate_size": 1024,
             "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 64,
             "decoder_dim": 1536, "semantic_codebook_size": 4096, "vector_quantization_hidden_dimension": 512},
}

_OUTPUT_RMS = 0.025  # final conv gain: the trunk reaches the last conv at an RMS of ~4
# What a served random model (builtin:tiny, the benchmark presets) plays in a room: a quiet hiss (about -45 dBFS RMS,
# peaks near -30 dBFS), not the -2 dBFS noise of the unit-scale gain, which tests of the decoder graph want.
QUIET_OUTPUT_RMS = 0.0008


def random_codec_decoder_weights(decoder_config: dict, rng: np.random.Generator,
                                 output_rms: float = _OUTPUT_RMS) -> dict[str, np.ndarray]:
    """f32 tensors keyed exactly like the "decoder.*" part of speech_tokenizer/model.safetensors; `output_rms`
    scales the last conv (and so the waveform) linearly."""
    c = decoder_config
    w: dict[str, np.ndarray] = {}

    def normal(key: str, shape, std: float, mean: float = 0.0) -> None:
        w["decoder." + key] = (mean + std * rng.standard_normal(shape)).astype(np.float32)

    def conv(key: str, out_ch: int, in_ch: int, kernel: int, gain: float = 1.0) -> None:
        normal(key + ".weight", (out_ch, in_ch, kernel), gain / np.sqrt(in_ch * kernel))
        normal(key + ".bias", (out_ch,), 0.02)

    def linear(key: str, out_f: int, in_f: int, bias: bool, gain: float = 1.0) -> None:
        normal(key + ".weight", (out_f, in_f), gain / np.sqrt(in_f))
        if bias:
            normal(key + ".bias", (out_f,), 0.02)

    def snake(key: str, channels: int) -> None:
        normal(key + ".alpha", (channels,), 0.2)  # log frequency
        normal(key + ".beta", (channels,), 0.2, mean=1.0)  # log of the inverse magnitude: keeps sin^2 modest

    # Split RVQ: codebook entries ~N(0, 1) after the division by cluster usage, usage spread over [0.5, 2].
    codebook_dim, vq_dim, size = c["codebook_dim"], c["codebook_dim"] // 2, c["codebook_size"]
    groups = {"rvq_first": 1, "rvq_rest": c["num_quantizers"] - 1}
    for name, count in groups.items():
        for i in range(count):
            usage = rng.uniform(0.5, 2.0, size).astype(np.float32)
            w[f"decoder.quantizer.{name}.vq.layers.{i}._codebook.cluster_usage"] = usage
            normal(f"quantizer.{name}.vq.layers.{i}._codebook.embedding_sum", (size, vq_dim), 1.0)
            w[f"decoder.quantizer.{name}.vq.layers.{i}._codebook.embedding_sum"] *= usage[:, None]
        # Each group is a sum of `count` entries: scale so both groups contribute at unit scale.
        normal(f"quantizer.{name}.input_proj.weight", (vq_dim, codebook_dim, 1), 1 / np.sqrt(codebook_dim))
        normal(f"quantizer.{name}.output_proj.weight", (codebook_dim, vq_dim, 1), 1 / np.sqrt(vq_dim * count))

    latent, hidden = c["latent_dim"], c["hidden_size"]
    conv("pre_conv.conv", latent, codebook_dim, 3)

    heads, kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = c.get("head_dim") or hidden // heads
    t = "pre_transformer."
    linear(t + "input_proj", hidden, latent, bias=True)
    for i in range(c["num_hidden_layers"]):
        layer = f"{t}layers.{i}."
        normal(layer + "input_layernorm.weight", (hidden,), 0.1, mean=1.0)
        normal(layer + "post_attention_layernorm.weight", (hidden,), 0.1, mean=1.0)
        linear(layer + "self_attn.q_proj", heads * head_dim, hidden, bias=False, gain=2.0)  # sharper attention
        linear(layer + "self_attn.k_proj", kv_heads * head_dim, hidden, bias=False, gain=2.0)
        linear(layer + "self_attn.v_proj", kv_heads * head_dim, hidden, bias=False)
        linear(layer + "self_attn.o_proj", hidden, heads * head_dim, bias=False)
        linear(layer + "mlp.gate_proj", c["intermediate_size"], hidden, bias=False)
        linear(layer + "mlp.up_proj", c["intermediate_size"], hidden, bias=False)
        linear(layer + "mlp.down_proj", hidden, c["intermediate_size"], bias=False)
        # LayerScale well above its 0.01 init so attention (and its state across pushes) shapes the output.
        normal(layer + "self_attn_layer_scale.scale", (hidden,), 0.05, mean=0.3)
        normal(layer + "mlp_layer_scale.scale", (hidden,), 0.05, mean=0.3)
    normal(t + "norm.weight", (hidden,), 0.1, mean=1.0)
    linear(t + "output_proj", latent, hidden, bias=True)

    for i, factor in enumerate(c["upsampling_ratios"]):
        up = f"upsample.{i}."
        normal(up + "0.conv.weight", (latent, latent, factor), 1 / np.sqrt(latent))  # [C_in, C_out, k]
        normal(up + "0.conv.bias", (latent,), 0.02)
        conv(up + "1.dwconv.conv", latent, 1, 7)
        normal(up + "1.norm.weight", (latent,), 0.1, mean=1.0)
        normal(up + "1.norm.bias", (latent,), 0.02)
        linear(up + "1.pwconv1", 4 * latent, latent, bias=True)
        linear(up + "1.pwconv2", latent, 4 * latent, bias=True)
        normal(up + "1.gamma", (latent,), 0.05, mean=0.3)

    dim = c["decoder_dim"]
    conv("decoder.0.conv", dim, latent, 7)
    rates = c["upsample_rates"]
    for b, rate in enumerate(rates, start=1):
        block = f"decoder.{b}.block."
        in_dim, out_dim = dim // 2 ** (b - 1), dim // 2 ** b
        snake(block + "0", in_dim)
        # A transposed conv output sample sums 2 taps (kernel 2*rate, stride rate) over in_dim channels.
        normal(block + "1.conv.weight", (in_dim, out_dim, 2 * rate), 1 / np.sqrt(2 * in_dim))
        normal(block + "1.conv.bias", (out_dim,), 0.02)
        for unit in (2, 3, 4):
            snake(f"{block}{unit}.act1", out_dim)
            conv(f"{block}{unit}.conv1.conv", out_dim, out_dim, 7)
            snake(f"{block}{unit}.act2", out_dim)
            conv(f"{block}{unit}.conv2.conv", out_dim, out_dim, 1, gain=0.5)  # residual branch, not the trunk
    out_dim = dim // 2 ** len(rates)
    snake(f"decoder.{len(rates) + 1}", out_dim)
    conv(f"decoder.{len(rates) + 2}.conv", 1, out_dim, 7, gain=output_rms)
    w[f"decoder.decoder.{len(rates) + 2}.conv.bias"][:] = 0.0  # no DC offset on the waveform
    return w
