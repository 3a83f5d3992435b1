"""A streamed reply is spoken while it is written (server.streaming_input): speech starts before the first
sentence is complete, over real TCP with wyoming's own client, against the real engine (tiny model)."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop

from helpers import HOST, TIMEOUT, ServiceThread, audio, free_port, read_until

pytestmark = pytest.mark.asyncio

UNFINISHED = ["The wash", "ing machine", " in the base", "ment has fin", "ished its "]  # no sentence end yet


async def first_event_within(client: AsyncTcpClient, seconds: float):
    try:
        return await asyncio.wait_for(client.read_event(), seconds)
    except TimeoutError:
        return None


async def test_speech_starts_before_the_first_sentence_is_complete(chorus):
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart().event())
        for delta in UNFINISHED:
            await client.write_event(SynthesizeChunk(delta).event())
        start = await first_event_within(client, TIMEOUT)
        assert start is not None and start.type == "audio-start"
        chunk = await asyncio.wait_for(client.read_event(), TIMEOUT)
        assert chunk.type == "audio-chunk"
        for delta in ("cycle, and the", " clothes are dry."):
            await client.write_event(SynthesizeChunk(delta).event())
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
        assert [e.type for e in rest[-2:]] == ["audio-stop", "synthesize-stopped"]
        assert len(audio([start, chunk, *rest[:-1]])) > len(chunk.payload)


@pytest.fixture(scope="module")
def sentence_at_a_time(chorus):
    """The same server, speaking each sentence once it is complete."""
    settings = chorus.service.settings
    server = dataclasses.replace(settings.server, streaming_input=False, uri=f"tcp://127.0.0.1:{free_port()}")
    running = ServiceThread(dataclasses.replace(settings, server=server,
                                                metrics=dataclasses.replace(settings.metrics, enabled=False)))
    running.start()
    yield running
    running.stop()


async def test_with_streaming_input_off_speech_waits_for_the_sentence(sentence_at_a_time):
    async with AsyncTcpClient(HOST, sentence_at_a_time.port) as client:
        await client.write_event(SynthesizeStart().event())
        for delta in UNFINISHED:
            await client.write_event(SynthesizeChunk(delta).event())
        assert await first_event_within(client, 1.5) is None  # no sentence end, no pause after one: silence
        await client.write_event(SynthesizeChunk("cycle.").event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
        assert events[0].type == "audio-start" and len(audio(events[:-1])) > 0
