"""Write a random-weight model directory with the real Qwen3-TTS architecture.

    python tools/make_model.py --preset tiny --out models/tiny
    python tools/make_model.py --preset 0.6b --out models/random-0.6b --seed 7

tiny (f32, a few MB) is what the service builds for itself and the tests use; 0.6b / 1.7b have the real
dimensions (f16 weights, ~2 / ~4 GB) for benchmarks. No checkpoint is downloaded.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# Runnable from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_chorus.export.presets import PRESETS, write_preset_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=PRESETS, required=True)
    parser.add_argument("--out", type=Path, required=True, help="model directory to write")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    out = write_preset_model(args.preset, args.out, args.seed)
    print(f"wrote {args.preset} to {out} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
