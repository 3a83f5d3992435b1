"""A studio voices file whose default names a voice the model lacks (saved before the model was switched): the server
falls back to the first voice with a warning and keeps the studio's voices, new voices can still be made, and the
page's listing says so, so that it offers the fix (tests/studio/test_studio_browser.py clicks it)."""
from __future__ import annotations

import asyncio
import logging

import yaml

from studio_helpers import base_model, clip_bytes, clone, listed, stale_studio_file, start_studio


async def test_a_stale_default_falls_back_keeps_the_voices_and_is_fixed(tmp_path, caplog):
    stale_studio_file(tmp_path / "studio" / "voices.yaml")
    with caplog.at_level(logging.WARNING):
        running = await asyncio.to_thread(start_studio, base_model(tmp_path), tmp_path)
    try:
        assert "the default voice is Kept instead" in caplog.text
        assert (await listed(running))[0] == "Kept"  # the studio's voice stays, and speaks by default meanwhile
        status, listing = await asyncio.to_thread(running.call, "api/voices")
        assert listing["stale_default"] == "ryan" and listing["voices"][0]["name"] == "Kept"
        # A new voice is made despite the stale default (every change was refused before).
        status, answer = await asyncio.to_thread(clone, running, "Fresh", clip_bytes(), None, voice_only=True)
        assert status == 200, answer
        status, answer = await asyncio.to_thread(running.call, "api/default", {"name": "Fresh"})
        assert status == 200, answer
        status, listing = await asyncio.to_thread(running.call, "api/voices")
        assert listing["stale_default"] is None and (await listed(running))[0] == "Fresh"
        assert yaml.safe_load(running.voices_file.read_text())["voices"]["default"] == "Fresh"
    finally:
        await asyncio.to_thread(running.service.stop)
