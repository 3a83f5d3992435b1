"""A reply's language end to end: text in a language the model does not speak is spoken anyway, its numbers left as
written, with one warning line per reply; Describe offers every language the model speaks on every speaker."""
from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from wyoming_chorus.config import EngineSettings
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.frontend.language import LANGUAGES
from wyoming_chorus.frontend.requests import RequestBuilder
from wyoming_chorus.modeldir.manifest import ModelDir

from helpers import HOST, read_until, send

DUTCH = "Het licht in de woonkamer is uit. De achterdeur staat al tien minuten open."


def _reply_lines(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "wyoming_chorus.replies" and r.levelno == level]


@pytest.mark.asyncio
async def test_text_in_a_language_the_model_lacks_is_spoken_with_one_warning_per_reply(chorus, caplog):
    caplog.set_level(logging.INFO, logger="wyoming_chorus.replies")
    # Two sentences, so two requests: still one reply, one warning.
    events = await send(chorus.port, Synthesize(DUTCH, voice=SynthesizeVoice(name="ryan")).event())
    assert sum(len(e.payload or b"") for e in events if e.type == "audio-chunk") > 0
    (warning,) = _reply_lines(caplog, logging.WARNING)
    assert warning.startswith("reply to 127.0.0.1:") and "Dutch (nl)" in warning, warning
    assert "left as written" in warning, warning
    (info,) = _reply_lines(caplog, logging.INFO)
    assert "language auto" in info and info.endswith(", ok"), info


@pytest.mark.asyncio
async def test_a_streamed_reply_warns_once_and_a_spoken_language_not_at_all(chorus, caplog):
    caplog.set_level(logging.INFO, logger="wyoming_chorus.replies")
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="serena")).event())
        await client.write_event(SynthesizeChunk("Lampan i vardagsrummet är släckt.").event())
        await asyncio.sleep(0.6)  # past the pause grace: the next sentence is a request of its own
        await client.write_event(SynthesizeChunk(" Ytterdörren har stått öppen i tio minuter.").event())
        await client.write_event(SynthesizeStop().event())
        await read_until(client, "synthesize-stopped")
    await send(chorus.port, Synthesize("Im Wohnzimmer sind es 21,5 °C.", voice=SynthesizeVoice(name="ryan")).event())
    (warning,) = _reply_lines(caplog, logging.WARNING)
    assert "Swedish (sv)" in warning, warning
    assert len(_reply_lines(caplog, logging.INFO)) == 2


def test_text_in_a_language_the_model_lacks_keeps_its_numbers_as_written():
    """Not read with German words ("over eins uur", "einundzwanzig Komma fünf Grad Celsius"), nor English ones: the
    digits and units reach the model as the Dutch text wrote them."""
    builder = RequestBuilder(ModelDir(resolve_model("builtin:tiny")), EngineSettings(seed=1))
    dutch = builder.build("Over 1 uur is het 21,5 °C in de woonkamer.", voice="ryan")
    assert dutch.language is None  # the model decides how to say it
    with_digits = builder.prompts.build("Over 1 uur is het 21,5 °C in de woonkamer.", speaker="ryan", language=None)
    np.testing.assert_array_equal(text_rows(dutch), np.concatenate([with_digits.prefill, with_digits.trailing]))


def text_rows(seq) -> np.ndarray:
    """Every row the request's text makes: its prompt's and those fed beside its frames (engine.prompt_layout)."""
    return np.concatenate([seq.rows(0, seq.num_rows), seq.trailing_text])


@pytest.mark.asyncio
async def test_describe_offers_every_language_the_model_speaks_on_every_speaker(chorus):
    """So that Home Assistant offers the engine to a Spanish (or Russian, Japanese...) pipeline on a test install."""
    events = await send(chorus.port, Describe().event(), last_type="info")
    voices = {voice.name: voice.languages for voice in Info.from_event(events[-1]).tts[0].voices}
    assert set(voices) == {"ryan", "serena", "eric"}
    for name, languages in voices.items():
        assert sorted(languages) == sorted(LANGUAGES), name
    assert voices["ryan"][0] == "en" and voices["serena"][0] == "zh" and voices["eric"][0] == "zh"  # native first
