"""Playback as each reply's listener hears it, over real TCP against the real engine (tiny model): a stream whose
second sentence comes after the first one's audio has played out is an underrun; every reply observes its time to
Home Assistant's first sound, and the engine its requests' slack."""
from __future__ import annotations

import asyncio

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from helpers import HOST, SENTENCE, audio, read_until, send

pytestmark = pytest.mark.asyncio


def sample(chorus, name: str) -> float:
    """The value of one sample (e.g. chorus_playback_underruns_total) summed over its labels."""
    return sum(s.value for f in chorus.service.metrics.registry.collect() for s in f.samples if s.name == name)


async def first_sentence(client: AsyncTcpClient) -> float:
    """Reads the first sentence's audio (until no chunk has come for a second); returns how long it plays."""
    events = await read_until(client, "audio-chunk")
    while True:
        try:
            events.append(await asyncio.wait_for(client.read_event(), 1.0))
        except TimeoutError:
            break
    return sum(len(e.payload or b"") for e in events if e.type == "audio-chunk") / (24000 * 2)


async def test_a_sentence_that_comes_after_the_audio_ran_out_is_counted_as_an_underrun(chorus):
    underruns = sample(chorus, "chorus_playback_underruns_total")
    silence = sample(chorus, "chorus_playback_underrun_seconds_total")
    first_sounds = sample(chorus, "chorus_time_to_5s_audio_seconds_count")
    slack_seen = sample(chorus, "chorus_playback_slack_seconds_count")
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(SENTENCE + " ").event())
        # The listener plays the first sentence out, then hears nothing for 2 s before the next one is even sent.
        await asyncio.sleep(await first_sentence(client) + 2.0)
        await client.write_event(SynthesizeChunk("And then some more words here.").event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
    assert [e.type for e in events][-2:] == ["audio-stop", "synthesize-stopped"]
    assert sample(chorus, "chorus_playback_underruns_total") - underruns >= 1
    assert sample(chorus, "chorus_playback_underrun_seconds_total") - silence >= 2.0
    assert sample(chorus, "chorus_time_to_5s_audio_seconds_count") - first_sounds == 1
    # The second sentence ran while its reply's listener was hearing (or waiting for) audio: the engine saw slack.
    assert sample(chorus, "chorus_playback_slack_seconds_count") > slack_seen


async def test_every_reply_observes_its_first_sound_once(chorus):
    """Whether a one-shot reply underruns depends on how fast this machine makes it: not asserted."""
    first_sounds = sample(chorus, "chorus_time_to_5s_audio_seconds_count")
    pcm = audio(await send(chorus.port, Synthesize(SENTENCE).event()))
    assert pcm
    assert sample(chorus, "chorus_time_to_5s_audio_seconds_count") - first_sounds == 1
