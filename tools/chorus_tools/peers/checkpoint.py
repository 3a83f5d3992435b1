"""tools/bench_peers.py's model: one random CustomVoice checkpoint at our presets' dimensions, made with qwen-tts's
own classes in the Hugging Face layout, and vox's conversion of it. Built once per (preset, seed, recipe)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Part of the cache key: bump it when the checkpoint recipe below changes, so that no stale model is reused.
RECIPE = 2


def model_dir(cache: Path, preset: str, seed: int) -> Path:
    return cache / f"{preset}-seed{seed}-r{RECIPE}"


def import_reference():
    """tests/qwen_reference.py: the fidelity tests' helpers. Importing it stands in empty modules for qwen-tts's
    audio-input dependencies (librosa, torchaudio...), which the `--no-deps` install leaves out and nothing here
    runs, and then imports qwen-tts."""
    for path in (ROOT, ROOT / "tests"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    import qwen_reference

    return qwen_reference


def build_checkpoint(out: Path, preset: str, seed: int) -> None:
    """A random CustomVoice checkpoint in the hub layout, as tests/qwen_reference.make_checkpoint makes its tiny
    one, at `preset`'s dimensions: the talker by Qwen3TTSForConditionalGeneration with its own initialisation, the
    codec decoder with audible random weights (the reference initialisation decodes to near silence), a minimal
    Mimi encoder (the layout needs one; nothing runs it). Stored in bfloat16 as the released checkpoints are; both
    peers compute in float32."""
    reference = import_reference()
    import numpy as np
    import torch
    from qwen_tts.core import Qwen3TTSTokenizerV2Config, Qwen3TTSTokenizerV2Model
    from qwen_tts.core.models import Qwen3TTSConfig, Qwen3TTSForConditionalGeneration

    from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
    from wyoming_chorus.export.presets import TEXT_SPECIAL_TOKENS, talker_config, tokenizer_vocab_size
    from wyoming_chorus.export.tokenizer import special_token_ids, train_tokenizer

    from hub_layout import write_tokenizer_files

    out.mkdir(parents=True, exist_ok=True)
    tokenizer_json = train_tokenizer(tokenizer_vocab_size(preset), reference.SPECIAL_TOKENS)
    write_tokenizer_files(out, tokenizer_json)
    ids = special_token_ids(tokenizer_json, reference.SPECIAL_TOKENS)
    config = talker_config(preset, {key: ids[token] for key, token in TEXT_SPECIAL_TOKENS.items()})

    torch.manual_seed(seed)
    model = Qwen3TTSForConditionalGeneration(Qwen3TTSConfig(**config)).eval()
    with torch.no_grad():
        # A random model does emit end-of-speech now and then (vox stopped after 5 frames on the tiny one): a zero
        # row gives it a logit of 0, below the best of 2048 random code logits, so greedy decoding never picks it
        # and every request runs to the frame cap on both peers.
        model.talker.codec_head.weight[config["talker_config"]["codec_eos_token_id"]] = 0.0
    model.to(torch.bfloat16).save_pretrained(out)
    del model
    (out / "generation_config.json").write_text(json.dumps(reference.GENERATION_CONFIG, indent=2))
    saved = json.loads((out / "config.json").read_text())
    # qwen-tts cannot reload its own save_pretrained output: the speaker-encoder part gains an empty model_type.
    saved.get("speaker_encoder_config", {}).pop("model_type", None)
    (out / "config.json").write_text(json.dumps(saved, indent=2))

    decoder_config = CODEC_PRESETS["tiny" if preset == "tiny" else "real"]
    codec = Qwen3TTSTokenizerV2Model(Qwen3TTSTokenizerV2Config(
        encoder_config=reference._TINY_ENCODER, decoder_config=decoder_config)).eval()
    decoder = random_codec_decoder_weights(decoder_config, np.random.default_rng([seed, 1]))
    missing = [key for key in codec.state_dict() if key.startswith("decoder.") and key not in decoder]
    if missing:
        raise RuntimeError(f"random codec weights lack {missing[:3]}")
    codec.load_state_dict({key: torch.from_numpy(value) for key, value in decoder.items()}, strict=False)
    codec.save_pretrained(out / "speech_tokenizer")
    (out / "speech_tokenizer" / "preprocessor_config.json").write_text(json.dumps({
        "feature_extractor_type": "EncodecFeatureExtractor", "feature_size": 1, "sampling_rate": 24000,
        "padding_side": "right", "padding_value": 0.0, "return_attention_mask": True}))


def build_tmod(checkpoint: Path, out: Path) -> None:
    """vox's own converter, as its users run it; written aside and renamed, so an interrupted build is not cached."""
    partial = out.with_suffix(".partial")
    done = subprocess.run([sys.executable, "-m", "vox", "build", "--model", str(checkpoint), "--dtype", "f32",
                           "-o", str(partial)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"vox build failed: {last_line(done.stderr or done.stdout)}")
    partial.rename(out)


def last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
