"""Export a Qwen3-TTS checkpoint directory to a model directory (the same as `wyoming-chorus export`).

    python scripts/export.py ~/models/Qwen3-TTS-12Hz-0.6B-CustomVoice -o models/custom-0.6b
    python scripts/export.py CHECKPOINT -o models/custom-1.7b-int8 --weights int8
"""
from __future__ import annotations

import sys
from pathlib import Path

# Runnable from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:]]))
