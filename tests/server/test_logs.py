"""The log says what is served and what every reply did: a household can tell whether Home Assistant connected."""
from __future__ import annotations

import asyncio
import logging

from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from helpers import HOST, read_until, send


async def test_each_reply_gets_one_info_line_with_peer_voice_language_timing_and_status(chorus, caplog):
    caplog.set_level(logging.INFO, logger="wyoming_chorus.replies")
    # As Home Assistant sends it: a voice name, no language, German text.
    await send(chorus.port, SynthesizeStart(voice=SynthesizeVoice(name="ryan")).event(),
               SynthesizeChunk("Es sind 21,5 Grad im Wohnzimmer.").event(), SynthesizeStop().event(),
               last_type="synthesize-stopped")
    await send(chorus.port, Synthesize("Hi.", voice=SynthesizeVoice(name="no-such-voice")).event())
    lines = [r.getMessage() for r in caplog.records if r.name == "wyoming_chorus.replies"]
    assert len(lines) == 2, lines
    spoken, refused = lines
    assert spoken.startswith("reply to 127.0.0.1:")
    for part in ("voice ryan", "language de (detected)", "32 characters", "first audio", "s of audio", "RTF"):
        assert part in spoken, spoken
    assert spoken.endswith(", ok")
    assert "no audio" in refused and "error unknown-voice" in refused, refused


async def test_a_reply_spoken_in_two_languages_names_both(chorus, caplog):
    """A pause after a sentence end makes the text after it a request of its own, with a language of its own."""
    caplog.set_level(logging.INFO, logger="wyoming_chorus.replies")
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="ryan")).event())
        await client.write_event(SynthesizeChunk("The weather in the kitchen is lovely today.").event())
        await asyncio.sleep(0.6)  # past the pause grace (0.2 s)
        await client.write_event(SynthesizeChunk("Es sind einundzwanzig Grad im Wohnzimmer und es ist warm.").event())
        await client.write_event(SynthesizeStop().event())
        await read_until(client, "synthesize-stopped")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "wyoming_chorus.replies"]
    assert "languages en (detected), de (detected)" in line, line


def test_the_start_up_summary_names_the_model_its_weights_the_device_and_the_pool(chorus):
    model, device, codec = chorus.service.engine.summary()
    assert model.startswith("model tiny (custom_voice, f32 weights)") and "RANDOM weights" in model
    assert device.startswith(f"device {chorus.service.engine.core.runner.device}")
    blocks = chorus.service.engine.stats().blocks_total
    assert f"KV cache u8: {blocks} blocks of 32 tokens" in device and "replies of 10 s at once" in device
    choice = chorus.service.engine.core.codec.choice
    assert codec == f"codec decoder in {choice.precision}: {choice.reason}" and choice.precision in ("f32", "bf16")
