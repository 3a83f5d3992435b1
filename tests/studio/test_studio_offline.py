"""The studio tried offline as a new user would: `builtin:tiny-base` clones and `builtin:tiny-design` designs (random
models built on first use, no download), and `--studio` turns the page on."""
from __future__ import annotations

import asyncio
import json

from wyoming_chorus.cli import _overrides, _serve_parser
from wyoming_chorus.config import load_settings
from wyoming_chorus.export.builtin import resolve_model

from studio_helpers import clip_bytes, clone, listed, start_studio


async def test_builtin_tiny_base_clones_and_tiny_design_designs(tmp_path):
    base = await asyncio.to_thread(resolve_model, "builtin:tiny-base")
    design = await asyncio.to_thread(resolve_model, "builtin:tiny-design")
    assert json.loads((base / "chorus.json").read_text())["model_type"] == "base"
    assert (base / "speaker_encoder.xml").is_file()
    assert json.loads((design / "chorus.json").read_text())["model_type"] == "voice_design"
    for model, make in ((base, "clone"), (design, "design")):
        running = await asyncio.to_thread(start_studio, model, tmp_path / make)
        try:
            if make == "clone":
                status, answer = await asyncio.to_thread(clone, running, "Offline", clip_bytes(), "Hello there.")
            else:
                status, answer = await asyncio.to_thread(running.call, "api/design",
                                                         {"name": "Offline", "instruct": "A calm voice."})
            assert status == 200, answer
            assert "Offline" in await listed(running)
            status, listing = await asyncio.to_thread(running.call, "api/voices")
            assert listing["model"][make] is True and listing["model"]["random_weights"] is True
        finally:
            await asyncio.to_thread(running.service.stop)


def test_the_studio_flag_turns_the_studio_on():
    assert load_settings(None, _overrides(_serve_parser().parse_args(["--studio"]))).studio.enabled is True
    assert load_settings(None, _overrides(_serve_parser().parse_args([]))).studio.enabled is False
