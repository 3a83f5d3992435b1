"""Writes a model directory (the one format every other part reads) from HF-keyed weights and configs.

MODEL_DIR: talker.xml, code_predictor.xml, text.xml, codec_decoder.xml (+ .bin), embeddings.safetensors,
tokenizer.json, chorus.json; a Base model also speaker_encoder.xml and codec_encoder.xml (voice cloning).
Random-weight presets and the real-checkpoint exporter both come through here.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import openvino as ov
from safetensors.numpy import save_file

from wyoming_chorus.graphs.code_predictor import build_code_predictor
from wyoming_chorus.graphs.codec_decoder import build_codec_decoder
from wyoming_chorus.graphs.codec_encoder import build_codec_encoder
from wyoming_chorus.graphs.ops import Weights, require
from wyoming_chorus.graphs.speaker_encoder import build_speaker_encoder
from wyoming_chorus.graphs.talker import build_talker
from wyoming_chorus.graphs.text_embedding import build_text
from wyoming_chorus.modeldir.manifest import FORMAT, GENERATION_DEFAULTS

WEIGHT_DTYPES = ("f32", "f16")
_CODEC_IDS = {"pad": "codec_pad_id", "bos": "codec_bos_id", "eos": "codec_eos_token_id", "think": "codec_think_id",
              "nothink": "codec_nothink_id", "think_bos": "codec_think_bos_id", "think_eos": "codec_think_eos_id"}
_TEXT_IDS = {"im_start": "im_start_token_id", "im_end": "im_end_token_id", "tts_pad": "tts_pad_token_id",
             "tts_bos": "tts_bos_token_id", "tts_eos": "tts_eos_token_id"}


def write_model_dir(out_dir, talker_weights: Mapping[str, np.ndarray], config: Mapping,
                    codec_weights: Mapping[str, np.ndarray], codec_config: Mapping, tokenizer_json: str,
                    weight_dtype: str = "f32", *, name: str | None = None,
                    generation: Mapping | None = None, on_stage: Callable[[str], None] | None = None,
                    speaker_weights: Mapping[str, np.ndarray] | None = None,
                    codec_encoder_weights: Mapping[str, np.ndarray] | None = None,
                    random_weights: bool = False) -> Path:
    """Build every graph and write MODEL_DIR. weight_dtype "f16" stores graph constants in f16, "f32" exactly.

    chorus.json records the weight format ("weights": f32 / f16 here; compression rewrites it to int8 / int4) and
    `random_weights` (test and benchmark models), so that the server can say what it serves.

    `generation` overrides the sampling defaults (a checkpoint's generation_config.json); `name` defaults to the
    directory name; `on_stage(label)` is told before each part (building a real-size talker takes a while).
    `speaker_weights` (the `speaker_encoder.*` tensors of a Base checkpoint) add speaker_encoder.xml, and
    `codec_encoder_weights` (the codec's `encoder.*` tensors: a clip's codes for in-context cloning) codec_encoder.xml.
    """
    if weight_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"weight_dtype must be one of {WEIGHT_DTYPES}, not {weight_dtype!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stage = on_stage or (lambda label: None)
    # The codec first: it is the quickest graph, so codec weights that do not fit fail before the long part.
    stage("codec decoder graph")
    decoder_config = require(codec_config, "decoder_config", "the speech tokenizer config")
    _save(build_codec_decoder(codec_weights, decoder_config), out / "codec_decoder.xml", weight_dtype)
    stage("talker graph")
    _save(build_talker(talker_weights, config), out / "talker.xml", weight_dtype)
    stage("code predictor graph")
    _save(build_code_predictor(talker_weights, config), out / "code_predictor.xml", weight_dtype)
    stage("text embedding graph")
    _save(build_text(talker_weights, config), out / "text.xml", weight_dtype)
    if speaker_weights is not None:
        stage("speaker encoder graph")
        speaker_config = require(config, "speaker_encoder_config", "config.json")
        _save(build_speaker_encoder(speaker_weights, speaker_config), out / "speaker_encoder.xml", weight_dtype)
    if codec_encoder_weights is not None:
        stage("codec encoder graph")
        _save(build_codec_encoder(codec_encoder_weights, codec_config), out / "codec_encoder.xml", weight_dtype)
    # The tables the native runner gathers from, the tokenizer, and last the manifest that marks the directory done.
    save_file(_embedding_tables(talker_weights, config), str(out / "embeddings.safetensors"))
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    write_manifest(out, config, codec_config, name or out.name, generation,
                   codec_encoder=codec_encoder_weights is not None, weights=weight_dtype,
                   random_weights=random_weights)
    return out


def write_manifest(out: Path, config: Mapping, codec_config: Mapping, name: str,
                   generation: Mapping | None, codec_encoder: bool = False, weights: str = "f32",
                   random_weights: bool = False) -> None:
    talker = require(config, "talker_config", "config.json")
    decoder_config = require(codec_config, "decoder_config", "the speech tokenizer config")
    code_predictor = require(talker, "code_predictor_config", "talker_config")
    manifest = {
        "format": FORMAT,
        "name": name,
        "model_type": require(config, "tts_model_type", "config.json"),
        "weights": weights,
        "random_weights": random_weights,
        "hidden_size": int(require(talker, "hidden_size", "talker_config")),
        "num_code_groups": int(require(talker, "num_code_groups", "talker_config")),
        "codec_vocab_size": int(require(talker, "vocab_size", "talker_config")),
        "codebook_size": int(require(code_predictor, "vocab_size", "code_predictor_config")),
        "sample_rate": int(codec_config.get("output_sample_rate", 24000)),
        # The decoder's total upsampling is what one frame becomes in samples (1920 = 8*5*4*3 * 2*2).
        "samples_per_frame": math.prod(require(decoder_config, "upsample_rates", "decoder_config"))
        * math.prod(require(decoder_config, "upsampling_ratios", "decoder_config")),
        "codec_ids": {key: int(require(talker, field, "talker_config")) for key, field in _CODEC_IDS.items()},
        "text_ids": {key: int(require(config, field, "config.json")) for key, field in _TEXT_IDS.items()},
        "languages": {lang.lower(): int(i) for lang, i in (talker.get("codec_language_id") or {}).items()},
        "speakers": {spk.lower(): _speaker_id(i) for spk, i in (talker.get("spk_id") or {}).items()},
        "speaker_is_dialect": {spk.lower(): d for spk, d in (talker.get("spk_is_dialect") or {}).items()},
        # The reference drops instructions for the 0.6B size ("0b6"): that model was not trained on them.
        "supports_instruct": config.get("tts_model_size") != "0b6",
        "generation": {**GENERATION_DEFAULTS, **{k: v for k, v in (generation or {}).items()
                                                 if k in GENERATION_DEFAULTS}},
        # Base: the sample rate the speaker encoder's mel expects (reference clips are resampled to it).
        **({"speaker_encoder": {"sample_rate": int(config["speaker_encoder_config"].get("sample_rate", 24000)),
                                "embedding_size": int(config["speaker_encoder_config"].get("enc_dim", 1024))}}
           if config.get("tts_model_type") == "base" and "speaker_encoder_config" in config else {}),
        # codec_encoder.xml: a clip's codes (in-context cloning), from 24 kHz audio, one frame per 1920 samples.
        **({"codec_encoder": {"sample_rate": int(codec_config.get("input_sample_rate", 24000)),
                              "samples_per_frame": int(codec_config.get("encode_downsample_rate", 1920))}}
           if codec_encoder else {}),
        "talker": {"num_layers": int(talker["num_hidden_layers"]), "num_kv_heads": int(talker["num_key_value_heads"]),
                   "head_dim": int(talker.get("head_dim") or talker["hidden_size"] // talker["num_attention_heads"])},
    }
    (out / "chorus.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _speaker_id(value) -> int:
    # Some checkpoints store a speaker's codec id as a one-element list.
    return int(value[0]) if isinstance(value, (list, tuple)) else int(value)


def _embedding_tables(weights: Mapping[str, np.ndarray], config: Mapping) -> dict[str, np.ndarray]:
    talker = require(config, "talker_config", "config.json")
    code_predictor = require(talker, "code_predictor_config", "talker_config")
    hidden = int(require(talker, "hidden_size", "talker_config"))
    w = Weights(weights)
    codec = w.array_of_shape("talker.model.codec_embedding.weight", (int(talker["vocab_size"]), hidden))
    tables = [w.array_of_shape(f"talker.code_predictor.model.codec_embedding.{j}.weight",
                               (int(code_predictor["vocab_size"]), hidden))
              for j in range(int(code_predictor["num_code_groups"]) - 1)]
    return {"codec_embedding": np.ascontiguousarray(codec, dtype=np.float32),
            "cp_codec_embedding": np.ascontiguousarray(np.stack(tables), dtype=np.float32)}


def _save(model: ov.Model, path: Path, weight_dtype: str) -> None:
    ov.save_model(model, str(path), compress_to_fp16=weight_dtype == "f16")
