"""The codec precision an earlier start measured, kept beside the model: a restart compiles the one decoder it serves.

engine.codec_precision "auto" compiles the decoder in f32, in the plugin's default and (when the export left one) as
INT8, and decodes a probe with each to choose (codec_precision.py). That costs a start ~0.5 s of CPU on the tiny
model, more at real dims, and its answer only changes with what it measured: the decoder files, the CPU, the
OpenVINO release and the bound. So the verdict is kept in the model directory (`.codec_precision.json`) under a key
of exactly those (each file's size and modification time: a new export rewrites them), and a start that finds its
key serves that precision without measuring. Best effort: where the directory is read-only or the file unreadable,
every start measures, as before.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import openvino as ov

from wyoming_chorus.cpu import CpuFacts

VERDICTS = ".codec_precision.json"


def verdict_key(decoders: list[Path], facts: CpuFacts, bound: float) -> str:
    """What a measured verdict depends on, as one string."""
    files = []
    for xml in decoders:
        for path in (xml, xml.with_suffix(".bin")):
            with contextlib.suppress(OSError):
                stat = path.stat()
                files.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join([ov.get_version(), facts.isa, facts.default_inference, ",".join(facts.capabilities),
                     f"{bound:.3e}", *files])


def recall(model_dir: Path, key: str) -> tuple[str, str] | None:
    """(precision, reason) measured at an earlier start under `key`, or None."""
    try:
        verdict = json.loads((model_dir / VERDICTS).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    if not (isinstance(verdict, list) and len(verdict) == 2 and all(isinstance(part, str) for part in verdict)):
        return None
    return verdict[0], verdict[1]


def remember(model_dir: Path, key: str, precision: str, reason: str) -> None:
    """Keeps the verdict for later starts (only the latest: the files it was measured on replace the older ones)."""
    target = model_dir / VERDICTS
    staging = target.with_name(f"{VERDICTS}.{os.getpid()}")
    try:
        staging.write_text(json.dumps({key: [precision, reason]}) + "\n")
        os.replace(staging, target)  # whole or not at all, whichever start writes last
    except OSError:
        with contextlib.suppress(OSError):
            staging.unlink()
