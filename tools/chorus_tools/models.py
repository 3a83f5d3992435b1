"""Random-weight models at real dimensions for the benchmarks, built once by tools/make_model.py into a cache."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MAKE_MODEL = Path(__file__).resolve().parents[1] / "make_model.py"


def preset_model(cache: Path, preset: str) -> Path:
    """`cache`/`preset`, built there the first time (a child process: its memory is returned when it is done)."""
    out = cache / preset
    if not (out / "chorus.json").exists():
        subprocess.run([sys.executable, str(MAKE_MODEL), "--preset", preset, "--out", str(out)], check=True)
    return out
