"""A tiny CustomVoice checkpoint in the hub layout, made without torch from random weights: what `wyoming-chorus
export` reads and what a hub download fetches."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
from wyoming_chorus.export.presets import random_talker_weights, talker_config
from wyoming_chorus.export.tokenizer import special_token_ids, train_tokenizer

from hub_layout import write_bf16_safetensors, write_shards, write_tokenizer_files

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|tts_pad|>", "<|tts_text_bos|>", "<|tts_text_eod|>"]
TEXT_KEYS = {"im_start_token_id": "<|im_start|>", "im_end_token_id": "<|im_end|>", "tts_pad_token_id": "<|tts_pad|>",
             "tts_bos_token_id": "<|tts_text_bos|>", "tts_eos_token_id": "<|tts_text_eod|>"}
GENERATION = {"do_sample": True, "temperature": 0.7, "top_k": 30, "top_p": 0.95, "repetition_penalty": 1.1,
              "subtalker_dosample": False, "subtalker_temperature": 0.9, "subtalker_top_k": 50,
              "subtalker_top_p": 1.0, "max_new_tokens": 8192}


def write_checkpoint(out: Path, bf16: bool = False) -> tuple[dict[str, np.ndarray], str]:
    """A tiny CustomVoice checkpoint: talker weights sharded in two float32 files (or one bfloat16 file), the
    codec with an encoder tensor the exporter must skip. Returns the talker weights as stored, and the tokenizer."""
    out.mkdir(parents=True)
    tokenizer_json = train_tokenizer(384, SPECIAL)
    write_tokenizer_files(out, tokenizer_json)
    ids = special_token_ids(tokenizer_json, SPECIAL)
    config = talker_config("tiny", {key: ids[token] for key, token in TEXT_KEYS.items()})
    (out / "config.json").write_text(json.dumps(config))
    (out / "generation_config.json").write_text(json.dumps(GENERATION))
    weights = random_talker_weights(config, np.random.default_rng(0))
    weights["speaker_encoder.fc.weight"] = np.zeros((4, 4), np.float32)  # not the talker's: ignored
    if bf16:
        weights = write_bf16_safetensors(out / "model.safetensors", weights)
    else:
        write_shards(out, weights, 2)
    codec = out / "speech_tokenizer"
    codec.mkdir()
    (codec / "config.json").write_text(json.dumps({"model_type": "qwen3_tts_tokenizer_12hz",
                                                   "decoder_config": CODEC_PRESETS["tiny"],
                                                   "output_sample_rate": 24000}))
    codec_weights = random_codec_decoder_weights(CODEC_PRESETS["tiny"], np.random.default_rng(1))
    save_file({**codec_weights, "encoder.downsample.conv.weight": np.zeros((2, 2, 4), np.float32)},
              str(codec / "model.safetensors"))
    return weights, tokenizer_json
