"""Command line: `wyoming-chorus [flags]` serves (wyoming_chorus.app); `wyoming-chorus synth TEXT -o OUT.wav` speaks one
text to a file; `wyoming-chorus export CHECKPOINT -o MODEL_DIR` turns a Qwen3-TTS checkpoint into a model directory.

Settings come from config.yaml (or --config FILE), then the flags. An invalid configuration prints one line naming
the key and exits with 2; so does a setup error (the model, the device, a port, a path).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import wave
from pathlib import Path
from typing import Any

from wyoming_chorus import app
from wyoming_chorus.config import ConfigError, Settings, load_settings
from wyoming_chorus.errors import EngineError, SetupError
from wyoming_chorus.export.hub import HUB_MODELS
from wyoming_chorus.wyoming.info import program_version

PROG = "wyoming-chorus"


# ---- synth -------------------------------------------------------------------------------------------------------

async def _collect(speech: Any, request: Any) -> tuple[bytes, list]:
    """The PCM of `request`, and its frames' codes when it keeps them."""
    handle = speech.open(request)
    pcm = b"".join([chunk async for chunk in handle])
    return pcm, handle.codes


def _check_writable(path: Path, flag: str) -> None:
    """Fail before synthesising, not after: the folder of an output file must exist and take files."""
    folder = path.expanduser().resolve().parent
    if not folder.is_dir():
        raise SetupError(f"{flag} {path}: no folder {folder}; create it or write elsewhere")
    if not os.access(folder, os.W_OK):
        raise SetupError(f"{flag} {path}: cannot write in {folder}")


def synth(settings: Settings, args: argparse.Namespace) -> int:
    import numpy as np

    from wyoming_chorus.speech.api import Request
    from wyoming_chorus.speech.speech import Speech

    _check_writable(args.output, "-o")
    if args.save_codes:
        _check_writable(args.save_codes, "--save-codes")
    engine = Speech(app.model_dir(settings.engine), settings.engine, voices=settings.voices)
    engine.start()
    request = Request(args.text, voice=args.voice, speaker=args.speaker, keep_codes=bool(args.save_codes))
    try:
        pcm, codes = asyncio.run(_collect(engine, request))
    except EngineError as error:
        print(f"{PROG} synth: {error}", file=sys.stderr)
        return 1
    finally:
        engine.stop()
    with wave.open(str(args.output), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(engine.sample_rate)
        wav.writeframes(pcm)
    if args.save_codes:
        groups = engine.model.manifest.num_code_groups
        frames = np.stack(codes).astype(np.int32) if codes else np.zeros((0, groups), np.int32)
        np.save(args.save_codes, frames)  # frames x code groups (16)
    print(f"{args.output}: {len(pcm) // 2 / engine.sample_rate:.2f} s of audio")
    return 0


# ---- export ------------------------------------------------------------------------------------------------------

def export(args: argparse.Namespace) -> int:
    from wyoming_chorus.export.convert import (  # OpenVINO and the graph builders: only here
        ExportError,
        export_checkpoint,
    )
    from wyoming_chorus.export.default_weights import default_weights
    from wyoming_chorus.export.weight_check import Threshold, ThresholdError

    # No --weights: auto where NNCF is installed. Not announced here: a checkpoint that fails its checks gets one
    # line, and the export's own stage line says what auto does once the slow part starts.
    weights = args.weights or default_weights()[0]
    try:
        export_checkpoint(args.checkpoint, args.output, codec=args.codec, weights=weights, name=args.name,
                          int4_threshold=Threshold(args.int4_max_tvd, args.int4_min_agreement), log=sys.stderr)
    except (ExportError, ThresholdError) as error:
        print(f"{PROG} export: {error}", file=sys.stderr)
        return 2
    return 0


# ---- arguments ---------------------------------------------------------------------------------------------------

def _common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="configuration file instead of the embedded config.yaml")
    parser.add_argument("--model", help="model directory; or a Qwen3-TTS model on the Hugging Face hub, downloaded "
                        "and exported into --data-dir on first use: " + ", ".join(HUB_MODELS) + " or OWNER/NAME "
                        "(e.g. Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice); or builtin:tiny, a random model for tests "
                        "(builtin:tiny-base and builtin:tiny-design: random Base and VoiceDesign models, to try the "
                        "voice studio's cloning and designing offline) (engine.model)")
    parser.add_argument("--data-dir", help="where hub models are downloaded and exported (engine.data_dir)")
    parser.add_argument("--device", help="OpenVINO device: AUTO, CPU, GPU, GPU.N (engine.device)")
    parser.add_argument("--kv-precision",
                        help="KV cache element type: u8, f16, bf16, f32 (engine.kv_precision); f32 also sets f32 "
                        "inference unless --inference-precision is given: the exact mode, which reproduces the "
                        "reference implementation's greedy codes")
    parser.add_argument("--inference-precision",
                        help="compute precision: f32, bf16, f16, or '' for the device default, which is bf16 on CPUs "
                        "that have it (engine.inference_precision)")
    parser.add_argument("--debug", action="store_true", help="log at DEBUG level")


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Wyoming text-to-speech server (Qwen3-TTS on OpenVINO). "
        f"Run '{PROG} synth --help' to speak one text to a WAV file, "
        f"'{PROG} export --help' to make a model directory from a Qwen3-TTS checkpoint.",
    )
    parser.add_argument("--uri", help="where to listen, e.g. tcp://0.0.0.0:10200 (server.uri)")
    zeroconf = parser.add_mutually_exclusive_group()
    zeroconf.add_argument("--zeroconf", nargs="?", const=True, metavar="NAME",
                          help="advertise over zeroconf, optionally under NAME (zeroconf.enabled, zeroconf.name)")
    zeroconf.add_argument("--no-zeroconf", action="store_true", help="do not advertise over zeroconf")
    parser.add_argument("--metrics-port", type=int, help="port of /metrics and /health (metrics.port)")
    parser.add_argument("--metrics-address",
                        help="address /metrics and /health listen on, e.g. 127.0.0.1 (metrics.address)")
    parser.add_argument("--no-metrics", action="store_true",
                        help="serve neither /metrics nor /health (metrics.enabled: false)")
    parser.add_argument("--studio", action="store_true",
                        help="serve the voice studio, a web page to make, preview and delete voices, at "
                        "http://127.0.0.1:9701/ (studio.enabled; studio.address and studio.port say where)")
    parser.add_argument("--version", action="version", version=f"{PROG} {program_version() or '(not installed)'}")
    _common_flags(parser)
    return parser


def _synth_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"{PROG} synth", description="Speak one text to a WAV file.")
    parser.add_argument("text")
    parser.add_argument("-o", "--output", type=Path, required=True, help="WAV file to write")
    parser.add_argument("--voice", help="voice name (default: the model's first voice)")
    parser.add_argument("--speaker", help="speaker of the voice (default: its first speaker)")
    parser.add_argument("--seed", type=int, help="sampling seed (engine.seed)")
    parser.add_argument("--greedy", action="store_true", help="argmax instead of sampling (engine.greedy)")
    parser.add_argument("--save-codes", type=Path, metavar="FILE.npy", help="also save the codes, frames x 16")
    _common_flags(parser)
    return parser


def _export_parser() -> argparse.ArgumentParser:
    from wyoming_chorus.export.convert import WEIGHT_MODES
    from wyoming_chorus.export.weight_check import Threshold

    parser = argparse.ArgumentParser(
        prog=f"{PROG} export",
        description="Make a model directory from a Qwen3-TTS checkpoint directory (CustomVoice or VoiceDesign) as "
        "downloaded from the hub: config.json, generation_config.json, model.safetensors, the tokenizer files and "
        "speech_tokenizer/. Exits with 2 and one line naming the missing file or tensor if it is incomplete.",
    )
    parser.add_argument("checkpoint", type=Path, help="the checkpoint directory")
    parser.add_argument("-o", "--output", type=Path, required=True, help="model directory to write")
    parser.add_argument("--codec", type=Path, help="codec directory (default: CHECKPOINT/speech_tokenizer)")
    parser.add_argument("--weights", choices=WEIGHT_MODES,
                        help="weight storage: auto (the default with NNCF: INT4 for each graph whose error on this "
                        "checkpoint is within the threshold, INT8 else; the check adds a few minutes), f16 (the "
                        "default without NNCF), f32 (exact), int8 or int4 (compressed unchecked, need NNCF)")
    parser.add_argument("--int4-max-tvd", type=float, default=Threshold.max_tvd, metavar="D",
                        help="auto: the largest mean total variation distance INT4 may have (default %(default)s)")
    parser.add_argument("--int4-min-agreement", type=float, default=Threshold.min_agreement, metavar="SHARE",
                        help="auto: the smallest greedy code agreement INT4 must keep (default %(default)s)")
    parser.add_argument("--name", help="the voice name clients see (default: the output directory's name)")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Dotted config keys set by the flags that were given."""
    flags = {
        "uri": "server.uri", "model": "engine.model", "data_dir": "engine.data_dir", "device": "engine.device",
        "kv_precision": "engine.kv_precision", "inference_precision": "engine.inference_precision",
        "metrics_port": "metrics.port", "metrics_address": "metrics.address", "seed": "engine.seed",
    }
    overrides = {key: getattr(args, flag) for flag, key in flags.items() if getattr(args, flag, None) is not None}
    # An f32 cache next to bf16 arithmetic would be exact nowhere: f32 KV asks for the exact mode.
    if (getattr(args, "kv_precision", None) or "").lower() == "f32" and args.inference_precision is None:
        overrides["engine.inference_precision"] = "f32"
    if getattr(args, "greedy", False):
        overrides["engine.greedy"] = True
    if getattr(args, "zeroconf", None) is not None:
        overrides["zeroconf.enabled"] = True
        if isinstance(args.zeroconf, str):
            overrides["zeroconf.name"] = args.zeroconf
    if getattr(args, "no_zeroconf", False):
        overrides["zeroconf.enabled"] = False
    if getattr(args, "no_metrics", False):
        overrides["metrics.enabled"] = False
    if getattr(args, "studio", False):
        overrides["studio.enabled"] = True
    if args.debug:
        overrides["server.log_level"] = "DEBUG"
    return overrides


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "export":
        return export(_export_parser().parse_args(argv[1:]))
    is_synth = bool(argv) and argv[0] == "synth"
    args = _synth_parser().parse_args(argv[1:]) if is_synth else _serve_parser().parse_args(argv)
    try:
        settings = load_settings(args.config, _overrides(args))
    except ConfigError as error:
        print(f"{PROG}: config error: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.server.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        if is_synth:
            return synth(settings, args)
        return asyncio.run(app.serve(settings))
    except ConfigError as error:  # a voices section that does not fit the model: known once the model is read
        print(f"{PROG}: config error: {error}", file=sys.stderr)
        return 2
    except SetupError as error:  # the model, device, precision, a port or a path: the message says what to do
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the port is taken, the socket path is not writable, ...
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
