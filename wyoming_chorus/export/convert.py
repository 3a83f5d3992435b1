"""Exports a Qwen3-TTS checkpoint directory to a MODEL_DIR (the format every other part reads).

The checkpoint is the layout the reference's `Qwen3TTSModel.from_pretrained` reads:

    CHECKPOINT/config.json, generation_config.json, model.safetensors (or model.safetensors.index.json + shards),
               vocab.json + merges.txt + tokenizer_config.json (or tokenizer.json)
    CHECKPOINT/speech_tokenizer/config.json, model.safetensors      (the codec; --codec names another directory)

Only the `talker.*` tensors (talker, code predictor, embeddings, heads), a Base checkpoint's `speaker_encoder.*`
tensors (voice cloning from a speaker embedding) and the codec's `decoder.*` tensors are read, and for a Base
checkpoint the codec's `encoder.*` tensors (a clip's codes, for in-context cloning). Every file, and every talker
tensor the config implies, is checked before the slow part starts, and the codec (the quickest graph) is built
first, so an incomplete checkpoint fails in seconds with one line naming what is missing.
"""
from __future__ import annotations

import importlib.util
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from wyoming_chorus.export.build import write_model_dir
from wyoming_chorus.export.checkpoint import load_tensors, read_json
from wyoming_chorus.export.default_weights import AUTO_COST
from wyoming_chorus.export.presets import talker_shapes
from wyoming_chorus.export.tokenizer import tokenizer_from_files
from wyoming_chorus.graphs.speaker_encoder import speaker_encoder_shapes

# auto: INT4 per graph where this checkpoint's check passes, INT8 elsewhere (wyoming_chorus/export/int4_choice.py).
WEIGHT_MODES = ("f16", "f32", "int8", "int4", "auto")
COMPRESSED_MODES = ("int8", "int4", "auto")
# Base (voice cloning): its speaker encoder is exported, and clones speak from their clip's speaker embedding.
SUPPORTED_MODEL_TYPES = ("custom_voice", "voice_design", "base")
_SAMPLING = ("temperature", "top_k", "top_p", "repetition_penalty",
             "subtalker_temperature", "subtalker_top_k", "subtalker_top_p")


class ExportError(ValueError):
    """The checkpoint cannot be exported; the message fits on one line."""


def export_checkpoint(checkpoint, out_dir, codec=None, weights: str = "f16", name: str | None = None,
                      log: TextIO | None = sys.stderr, int4_threshold=None) -> Path:
    """Write MODEL_DIR `out_dir` from `checkpoint` (and the codec in `codec`, default CHECKPOINT/speech_tokenizer).

    weights: "f32" keeps the checkpoint's values exactly (bf16 checkpoints widen losslessly), "f16" halves the
    size, "int8" / "int4" compress the language-model graphs after an f16 export (wyoming_chorus/export/compress.py),
    "auto" checks INT4 on this checkpoint graph by graph against `int4_threshold` (a weight_check.Threshold, None:
    its defaults) and keeps INT8 where it misses (int4_choice.py). Progress goes to `log` (None: silent).
    Raises ExportError.
    """
    if weights not in WEIGHT_MODES:
        raise ExportError(f"--weights must be one of {', '.join(WEIGHT_MODES)}, not {weights!r}")
    checkpoint, out = Path(checkpoint), Path(out_dir).resolve()
    codec_dir = Path(codec) if codec is not None else checkpoint / "speech_tokenizer"
    if out.exists() and any(out.iterdir()) and not (out / "chorus.json").is_file():
        raise ExportError(f"{out} exists and is not a model directory; choose another output")
    progress = _Progress(log)
    compress = _compressor(weights, int4_threshold, progress) if weights in COMPRESSED_MODES else None
    # Written beside the output and renamed into place: a failed export never leaves a half-written model there.
    staging = out.with_name(f".{out.name}.exporting")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _write(checkpoint, codec_dir, staging, weights, name or out.name, compress, progress)
        if out.exists():
            shutil.rmtree(out)  # an earlier export (it has a chorus.json, checked above)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress.done(out)
    return out


def _write(checkpoint: Path, codec_dir: Path, out: Path, weights: str, name: str, compress, progress) -> None:
    try:
        if not checkpoint.is_dir():
            raise ExportError(f"{checkpoint} is not a directory")
        config = read_json(checkpoint / "config.json")
        model_type = config.get("tts_model_type")
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise ExportError(f"{checkpoint / 'config.json'}: tts_model_type {model_type!r} is not supported; "
                              f"export a {' or '.join(SUPPORTED_MODEL_TYPES)} checkpoint")
        generation = generation_defaults(read_json(checkpoint / "generation_config.json"))
        tokenizer_json = tokenizer_from_files(checkpoint)
        codec_config = read_json(codec_dir / "config.json")
        try:
            expected = talker_shapes(config)
        except KeyError as error:
            raise ExportError(f"{checkpoint / 'config.json'}: talker_config or its code_predictor_config has no "
                              f"{error.args[0]!r}") from None
        speaker = None
        if model_type == "base":  # small, so read before the talker: a checkpoint without it fails at once
            if not isinstance(config.get("speaker_encoder_config"), dict):
                raise ExportError(f"{checkpoint / 'config.json'}: a base model needs a speaker_encoder_config")
            speaker_config = config["speaker_encoder_config"]
            hidden = config["talker_config"]["hidden_size"]
            if int(speaker_config.get("enc_dim", 1024)) != int(hidden):  # the embedding is a talker input row
                raise ExportError(f"{checkpoint / 'config.json'}: the speaker embedding (enc_dim "
                                  f"{speaker_config.get('enc_dim', 1024)}) is not as wide as the talker ({hidden})")
            speaker = load_tensors(checkpoint, "speaker_encoder.", speaker_encoder_shapes(speaker_config),
                                   progress.counter("reading speaker encoder"))
        talker = load_tensors(checkpoint, "talker.", expected, progress.counter("reading talker weights"))
        codec_weights = load_tensors(codec_dir, "decoder.", None, progress.counter("reading codec weights"))
        codec_encoder = (load_tensors(codec_dir, "encoder.", None, progress.counter("reading codec encoder weights"))
                         if model_type == "base" else None)
        write_model_dir(out, talker, config, codec_weights, codec_config, tokenizer_json,
                        weight_dtype="f32" if weights == "f32" else "f16", name=name,
                        generation=generation, on_stage=progress.stage, speaker_weights=speaker,
                        codec_encoder_weights=codec_encoder)
    except ExportError:
        raise
    except ValueError as error:  # CheckpointError, or a config key or tensor the graph builders did not find
        raise ExportError(str(error)) from None
    if compress is not None:
        progress.stage(f"compressing weights to {weights}" if weights != "auto" else
                       f"compressing weights: INT4 where this checkpoint's check allows, INT8 elsewhere (the check "
                       f"{AUTO_COST})")
        try:
            compress(out, weights)
        except (RuntimeError, ValueError) as error:
            raise ExportError(f"compressing the weights: {error}") from None


def generation_defaults(generation_config: dict) -> dict:
    """The sampling defaults of generation_config.json, in chorus.json's "generation" form.

    do_sample / subtalker_dosample false mean greedy, which the engine reads as a temperature of 0.
    """
    generation = {key: generation_config[key] for key in _SAMPLING if key in generation_config}
    if generation_config.get("do_sample") is False:
        generation["temperature"] = 0.0
    if generation_config.get("subtalker_dosample") is False:
        generation["subtalker_temperature"] = 0.0
    return generation


def _compressor(weights: str, int4_threshold, progress: _Progress):
    """compress(model_dir, weights), checked before the export starts rather than after it."""
    try:
        from wyoming_chorus.export.compress import compress_model_dir
        from wyoming_chorus.export.int4_choice import compress_checked
        from wyoming_chorus.export.weight_check import Threshold
    except ImportError as error:
        raise ExportError(f"{weights} weights need wyoming_chorus.export's compression, which cannot be imported: "
                          f"{error}") from None
    if importlib.util.find_spec("nncf") is None:
        raise ExportError(f"{weights} weights need NNCF: pip install 'wyoming-chorus[compress]'")
    if weights != "auto":
        return compress_model_dir
    threshold = int4_threshold or Threshold()
    return lambda out, _: compress_checked(out, threshold, report=progress.line, on_stage=progress.stage)


class _Progress:
    """Stage lines on stderr; on a terminal, counts update in place."""

    def __init__(self, log: TextIO | None):
        self._log = log
        self._tty = bool(log is not None and log.isatty())
        self._started = time.perf_counter()

    def stage(self, label: str) -> None:
        self._write(f"export: {label} ...\n")

    def line(self, text: str) -> None:
        self._write(f"export: {text}\n")

    def counter(self, label: str):
        def report(done: int, total: int) -> None:
            if self._tty:
                self._write(f"\rexport: {label} {done}/{total}" + ("\n" if done == total else ""))
            elif done == total:
                self._write(f"export: {label}: {total} tensors\n")
        return report

    def done(self, out: Path) -> None:
        self._write(f"export: wrote {out} in {time.perf_counter() - self._started:.0f} s\n")

    def _write(self, text: str) -> None:
        if self._log is not None:
            self._log.write(text)
            self._log.flush()
