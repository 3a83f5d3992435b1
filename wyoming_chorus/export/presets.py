"""Model presets with the real Qwen3-TTS architecture and random weights (no checkpoint can be downloaded here).

`talker_config(preset, text_ids)` gives an HF-style config.json dict of Qwen3TTSForConditionalGeneration;
`random_talker_weights(config, rng)` gives every `talker.*` tensor of such a checkpoint, keyed and shaped exactly as
the HF checkpoint (tests/data/qwen3-tts-tiny-checkpoint-keys.tsv, checked by tests/native/test_model_graphs.py).
The tiny preset is the one the service builds for itself and the tests run on; 0.6b / 1.7b have the real dimensions
for benchmarks.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from wyoming_chorus.export.tokenizer import special_token_ids, train_tokenizer
from wyoming_chorus.graphs.ops import require

PRESETS = ("tiny", "0.6b", "1.7b")

# (layers, hidden, heads, kv heads, head_dim, intermediate)
_TALKER_DIMS = {
    "tiny": (2, 64, 4, 2, 16, 128),
    "0.6b": (28, 1024, 16, 8, 128, 3072),
    "1.7b": (28, 2048, 16, 8, 128, 6144),
}
_CODE_PREDICTOR_DIMS = {
    "tiny": (2, 32, 2, 1, 16, 64),
    "0.6b": (5, 1024, 16, 8, 128, 3072),
    "1.7b": (5, 1024, 16, 8, 128, 3072),
}
# (text vocab, text hidden, tokenizer vocab); the real text vocab is far larger than any tokenizer trained here.
_TEXT_DIMS = {"tiny": (384, 32, 384), "0.6b": (151936, 2048, 4096), "1.7b": (151936, 2048, 4096)}
_MROPE_SECTION = {"tiny": [4, 2, 2], "0.6b": [24, 20, 20], "1.7b": [24, 20, 20]}
_MODEL_SIZE = {"tiny": "tiny", "0.6b": "0b6", "1.7b": "1b7"}

# Codec-vocabulary ids above the 2048 codes; speakers and languages are embedded with the same codec table.
_CODEC_IDS = {"codec_pad_id": 2148, "codec_bos_id": 2149, "codec_eos_token_id": 2150, "codec_think_id": 2154,
              "codec_nothink_id": 2155, "codec_think_bos_id": 2156, "codec_think_eos_id": 2157}
# The real checkpoints' ten languages and two dialects, with their ids: a test install offers every language the real
# model speaks (Home Assistant greys out a pipeline language no voice lists).
_LANGUAGES = {"chinese": 2055, "english": 2050, "german": 2053, "italian": 2070, "portuguese": 2071, "spanish": 2054,
              "japanese": 2058, "korean": 2064, "french": 2061, "russian": 2069, "beijing_dialect": 2074,
              "sichuan_dialect": 2062}
_SPEAKERS = {"ryan": 3000, "serena": 3001, "eric": 3002}
_DIALECTS = {"ryan": False, "serena": False, "eric": "sichuan_dialect"}

TEXT_SPECIAL_TOKENS = {
    "im_start_token_id": "<|im_start|>",
    "im_end_token_id": "<|im_end|>",
    "tts_pad_token_id": "<|tts_pad|>",
    "tts_bos_token_id": "<|tts_text_bos|>",
    "tts_eos_token_id": "<|tts_text_eod|>",
}


def tokenizer_vocab_size(preset: str) -> int:
    return _TEXT_DIMS[_check(preset)][2]


def _decoder_config(dims: tuple[int, ...], rope_theta: float) -> dict:
    layers, hidden, heads, kv_heads, head_dim, intermediate = dims
    return {"num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "head_dim": head_dim, "intermediate_size": intermediate,
            "hidden_act": "silu", "rms_norm_eps": 1e-6, "rope_theta": rope_theta, "attention_bias": False}


def talker_config(preset: str, text_ids: Mapping[str, int]) -> dict:
    """config.json of a CustomVoice model; `text_ids` maps TEXT_SPECIAL_TOKENS' keys to the tokenizer's ids."""
    preset = _check(preset)
    text_vocab, text_hidden, _ = _TEXT_DIMS[preset]
    out_of_range = {key: value for key, value in text_ids.items() if not 0 <= value < text_vocab}
    if out_of_range:
        raise ValueError(f"special text ids {out_of_range} fall outside the text vocabulary of {text_vocab}")
    code_predictor = _decoder_config(_CODE_PREDICTOR_DIMS[preset], 10000.0)
    code_predictor.update(vocab_size=2048, num_code_groups=16)
    talker = _decoder_config(_TALKER_DIMS[preset], 1000000.0)
    talker.update(
        vocab_size=3072, num_code_groups=16, text_vocab_size=text_vocab, text_hidden_size=text_hidden,
        rope_scaling={"rope_type": "default", "mrope_section": _MROPE_SECTION[preset], "interleaved": True},
        code_predictor_config=code_predictor, codec_language_id=dict(_LANGUAGES), spk_id=dict(_SPEAKERS),
        spk_is_dialect=dict(_DIALECTS), **_CODEC_IDS,
    )
    return {"model_type": "qwen3_tts", "tts_model_type": "custom_voice", "tts_model_size": _MODEL_SIZE[preset],
            "tokenizer_type": "qwen3_tts_tokenizer_12hz", "talker_config": talker,
            **{key: int(text_ids[key]) for key in TEXT_SPECIAL_TOKENS}}


def talker_shapes(config: Mapping) -> dict[str, tuple[int, ...]]:
    """Every `talker.*` tensor name of the checkpoint with its shape, derived from config.json."""
    talker = require(config, "talker_config", "config.json")
    cp = require(talker, "code_predictor_config", "talker_config")
    hidden, cp_hidden = talker["hidden_size"], cp["hidden_size"]
    shapes = {
        "talker.model.codec_embedding.weight": (talker["vocab_size"], hidden),
        "talker.model.text_embedding.weight": (talker["text_vocab_size"], talker["text_hidden_size"]),
        "talker.text_projection.linear_fc1.weight": (talker["text_hidden_size"], talker["text_hidden_size"]),
        "talker.text_projection.linear_fc1.bias": (talker["text_hidden_size"],),
        "talker.text_projection.linear_fc2.weight": (hidden, talker["text_hidden_size"]),
        "talker.text_projection.linear_fc2.bias": (hidden,),
        "talker.codec_head.weight": (talker["vocab_size"], hidden),
    }
    shapes.update(_decoder_shapes("talker.model", talker))
    shapes.update(_decoder_shapes("talker.code_predictor.model", cp))
    for j in range(cp["num_code_groups"] - 1):
        shapes[f"talker.code_predictor.model.codec_embedding.{j}.weight"] = (cp["vocab_size"], hidden)
        shapes[f"talker.code_predictor.lm_head.{j}.weight"] = (cp["vocab_size"], cp_hidden)
    if cp_hidden != hidden:
        shapes["talker.code_predictor.small_to_mtp_projection.weight"] = (cp_hidden, hidden)
        shapes["talker.code_predictor.small_to_mtp_projection.bias"] = (cp_hidden,)
    return shapes


def _decoder_shapes(prefix: str, config: Mapping) -> dict[str, tuple[int, ...]]:
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    head_dim = config.get("head_dim") or hidden // config["num_attention_heads"]
    q, kv = config["num_attention_heads"] * head_dim, config["num_key_value_heads"] * head_dim
    shapes: dict[str, tuple[int, ...]] = {f"{prefix}.norm.weight": (hidden,)}
    for i in range(config["num_hidden_layers"]):
        layer = f"{prefix}.layers.{i}"
        shapes.update({
            f"{layer}.input_layernorm.weight": (hidden,),
            f"{layer}.post_attention_layernorm.weight": (hidden,),
            f"{layer}.self_attn.q_proj.weight": (q, hidden),
            f"{layer}.self_attn.k_proj.weight": (kv, hidden),
            f"{layer}.self_attn.v_proj.weight": (kv, hidden),
            f"{layer}.self_attn.o_proj.weight": (hidden, q),
            f"{layer}.self_attn.q_norm.weight": (head_dim,),
            f"{layer}.self_attn.k_norm.weight": (head_dim,),
            f"{layer}.mlp.gate_proj.weight": (inner, hidden),
            f"{layer}.mlp.up_proj.weight": (inner, hidden),
            f"{layer}.mlp.down_proj.weight": (hidden, inner),
        })
    return shapes


def random_talker_weights(config: Mapping, rng: np.random.Generator, std: float = 0.02) -> dict[str, np.ndarray]:
    """Normal(0, std) matrices, embeddings and biases; ones for every norm (the HF initialisation's scale)."""
    weights = {}
    for name, shape in talker_shapes(config).items():
        if "norm" in name.rsplit(".", 2)[-2]:
            weights[name] = np.ones(shape, np.float32)
        else:
            weights[name] = rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
    return weights


MODEL_TYPES = ("custom_voice", "base", "voice_design")
# The tiny Base model's speaker encoder (an ECAPA-TDNN as the real one, a few channels wide): clones from a clip's
# speaker embedding. It has no codec encoder, so it clones from the embedding alone, never in context.
_TINY_SPEAKER_ENCODER = {"mel_dim": 128, "enc_channels": [16, 16, 16, 16, 48], "enc_kernel_sizes": [5, 3, 3, 3, 1],
                         "enc_dilations": [1, 2, 3, 4, 1], "enc_attention_channels": 8, "enc_res2net_scale": 4,
                         "enc_se_channels": 8, "sample_rate": 24000}


def as_model_type(config: dict, model_type: str, rng: np.random.Generator) -> dict[str, np.ndarray] | None:
    """`config` (a CustomVoice config.json) made a Base or VoiceDesign model's, in place: those have no built-in
    speakers. A Base model's random speaker encoder weights are returned (None for the others)."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"unknown model type {model_type!r}; choose one of {', '.join(MODEL_TYPES)}")
    config["tts_model_type"] = model_type
    if model_type == "custom_voice":
        return None
    config["talker_config"].update(spk_id={}, spk_is_dialect={})
    if model_type != "base":
        return None
    from wyoming_chorus.graphs.speaker_encoder import speaker_encoder_shapes

    config["speaker_encoder_config"] = {**_TINY_SPEAKER_ENCODER, "enc_dim": config["talker_config"]["hidden_size"]}
    return {name: rng.standard_normal(shape).astype(np.float32) * np.float32(0.2)
            for name, shape in speaker_encoder_shapes(config["speaker_encoder_config"]).items()}


def write_preset_model(preset: str, out_dir, seed: int = 0, model_type: str = "custom_voice"):
    """A complete random-weight model directory: tiny in f32 (exact tests), the real sizes in f16; a CustomVoice
    model unless `model_type` says "base" or "voice_design"."""
    # Imported here: the graph builders pull in OpenVINO, which the config helpers above do not need.
    from wyoming_chorus.export.build import write_model_dir
    from wyoming_chorus.export.codec_random import CODEC_PRESETS, QUIET_OUTPUT_RMS, random_codec_decoder_weights

    tokenizer_json = train_tokenizer(tokenizer_vocab_size(preset), list(TEXT_SPECIAL_TOKENS.values()))
    ids = special_token_ids(tokenizer_json, list(TEXT_SPECIAL_TOKENS.values()))
    config = talker_config(preset, {key: ids[token] for key, token in TEXT_SPECIAL_TOKENS.items()})
    decoder_config = CODEC_PRESETS["tiny" if preset == "tiny" else "real"]
    codec_config = {"model_type": "qwen3_tts_tokenizer_12hz", "decoder_config": decoder_config,
                    "output_sample_rate": 24000, "decode_upsample_rate": 1920}
    # Separate streams so that the codec weights do not change when the talker's shapes do.
    talker_rng, codec_rng = (np.random.default_rng([seed, part]) for part in (0, 1))
    codec_weights = random_codec_decoder_weights(decoder_config, codec_rng, QUIET_OUTPUT_RMS)
    talker_weights = random_talker_weights(config, talker_rng)  # drawn before the model type changes the config
    speaker_weights = as_model_type(config, model_type, np.random.default_rng([seed, 2]))
    name = preset if model_type == "custom_voice" else f"{preset}-{model_type.replace('_', '-')}"
    return write_model_dir(out_dir, talker_weights, config, codec_weights, codec_config, tokenizer_json,
                           weight_dtype="f32" if preset == "tiny" else "f16", name=name, random_weights=True,
                           speaker_weights=speaker_weights)


def _check(preset: str) -> str:
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return preset
