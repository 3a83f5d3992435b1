"""Random-weight models at real dimensions for the benchmarks, built once by tools/make_model.py into a cache, and
the codec decoder a server serves a model with."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wyoming_chorus.engine.codec_precision import CodecChoice

MAKE_MODEL = Path(__file__).resolve().parents[1] / "make_model.py"


def preset_model(cache: Path, preset: str) -> Path:
    """`cache`/`preset`, built there the first time (a child process: its memory is returned when it is done)."""
    out = cache / preset
    if not (out / "chorus.json").exists():
        subprocess.run([sys.executable, str(MAKE_MODEL), "--preset", preset, "--out", str(out)], check=True)
    return out


def served_codec(directory: Path, inference_precision: str = "") -> CodecChoice:
    """The codec decoder a server with engine.codec_precision auto serves `directory` with on this CPU (its INT8
    twin where its audio passes), as the engine chooses it; `inference_precision`: the engine's. (Imported here: the
    benchmarks that only build models do not load OpenVINO for it.)"""
    from wyoming_chorus.engine.codec_precision import choose_codec_decoder
    from wyoming_chorus.modeldir.manifest import ModelDir

    return choose_codec_decoder(Path(directory) / "codec_decoder.xml", ModelDir(Path(directory)).manifest.codebook_size,
                                "auto", inference_precision)
