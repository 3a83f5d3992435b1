"""A streamed reply cannot wait for its text for ever (issue 15): server.stream_pause_timeout bounds the wait for its
next chunk, server.stream_max_seconds its whole life. Past either, the server ends it itself (error "stream-timeout",
audio-stop, synthesize-stopped) and the connection goes on. Over real TCP against the real engine (tiny model)."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import pytest
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from wyoming_chorus.config import EngineSettings

from helpers import SENTENCE, TIMEOUT, audio
from server_limits import PROMPT, connect, limited_server, read_replies, until

pytestmark = pytest.mark.asyncio

PAUSE = 0.5
OPENING = "The kitchen lights are "  # three words and no sentence end: a request starts and waits for more text


def assert_ended_by_timeout(reply: list[Event], limit: str) -> None:
    """The stream's audio so far (if any), the error naming `limit`, then its end. A chunk the client sent after the
    timeout (a trickle does not stop) may add its own unexpected-event error anywhere: the reading task answers it
    at once, while the speaker writes the timeout's error."""
    late = [e for e in reply if e.type == "error" and Error.from_event(e).code == "unexpected-event"]
    types = [e.type for e in reply if e.type != "audio-chunk" and e not in late]
    assert types in (["audio-start", "error", "audio-stop", "synthesize-stopped"],  # it had begun to speak
                     ["error", "audio-start", "audio-stop", "synthesize-stopped"]), types
    error = Error.from_event(next(e for e in reply if e.type == "error" and e not in late))
    assert error.code == "stream-timeout" and limit in error.text, error


async def test_a_silent_stream_is_ended_after_the_pause_timeout_and_the_connection_goes_on(chorus, caplog):
    caplog.set_level(logging.INFO, logger="wyoming_chorus.replies")
    engine = chorus.service.engine
    async with limited_server(chorus, stream_pause_timeout=PAUSE) as (_, port):
        reader, writer = await connect(port)
        started = time.monotonic()
        await async_write_event(SynthesizeStart().event(), writer)
        await async_write_event(SynthesizeChunk(OPENING).event(), writer)
        (reply,) = await read_replies(reader, 1, last_type="synthesize-stopped")
        assert PAUSE * 0.8 < time.monotonic() - started < PAUSE + PROMPT
        assert_ended_by_timeout(reply, "server.stream_pause_timeout")
        await until(lambda: engine.stats().blocks_used == 0, 10, "the timed-out request still holds KV blocks")
        # Its later chunks are refused as outside a stream; its synthesize-stop is not answered (its
        # synthesize-stopped has gone out): the next event is Describe's info.
        await async_write_event(SynthesizeChunk("still there?").event(), writer)
        event = await asyncio.wait_for(async_read_event(reader), PROMPT)
        assert Error.from_event(event).code == "unexpected-event"
        await async_write_event(SynthesizeStop().event(), writer)
        await async_write_event(Describe().event(), writer)
        assert (await asyncio.wait_for(async_read_event(reader), PROMPT)).type == "info"
        # New requests are served on the same connection: a one-shot and a whole stream.
        await async_write_event(Synthesize(SENTENCE).event(), writer)
        assert len(audio((await read_replies(reader, 1))[0])) > 0
        for event in (SynthesizeStart().event(), SynthesizeChunk(SENTENCE).event(), SynthesizeStop().event()):
            await async_write_event(event, writer)
        (stream,) = await read_replies(reader, 1, last_type="synthesize-stopped")
        assert len(audio(stream[:-1])) > 0
        writer.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "wyoming_chorus.replies"]
    assert "error stream-timeout: no text for 0.5 s (server.stream_pause_timeout)" in lines[0], lines


async def test_a_stream_that_failed_waits_for_its_stop_only_as_long_as_the_pause_timeout(chorus):
    async with limited_server(chorus, stream_pause_timeout=PAUSE) as (_, port):
        reader, writer = await connect(port)
        started = time.monotonic()
        await async_write_event(SynthesizeStart(voice=SynthesizeVoice("no-such-voice")).event(), writer)
        await async_write_event(SynthesizeChunk(SENTENCE).event(), writer)
        (reply,) = await read_replies(reader, 1, last_type="synthesize-stopped")
        assert PAUSE * 0.8 < time.monotonic() - started < PAUSE + PROMPT
        assert [e.type for e in reply] == ["error", "audio-start", "audio-stop", "synthesize-stopped"]
        assert Error.from_event(reply[0]).code == "unknown-voice"  # the first error is the one the client hears of
        writer.close()


async def test_a_trickling_stream_is_ended_at_its_max_life(chorus):
    life = 1.5
    async with limited_server(chorus, stream_pause_timeout=PAUSE, stream_max_seconds=life) as (_, port):
        reader, writer = await connect(port)
        started = time.monotonic()
        await async_write_event(SynthesizeStart().event(), writer)

        async def trickle() -> None:  # one more word every 0.6 pause timeouts, never a sentence end
            while True:
                await async_write_event(SynthesizeChunk("and ").event(), writer)
                await asyncio.sleep(0.6 * PAUSE)

        trickling = asyncio.create_task(trickle())
        try:
            (reply,) = await read_replies(reader, 1, last_type="synthesize-stopped")
            ended = time.monotonic() - started
        finally:
            trickling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await trickling
        assert life * 0.9 < ended < life + PROMPT
        assert_ended_by_timeout(reply, "server.stream_max_seconds")
        writer.close()


async def test_silent_streams_do_not_starve_a_one_shot_request_from_another_connection(chorus, shared_engine):
    """Issue 15's denial of service in small: streams that open and fall silent fill the batch (max_batch 2, and one
    more stream waiting for a place); a one-shot "Hi." from another connection still gets its audio within the pause
    timeout and some slack for a loaded machine, long before idle_timeout."""
    pause, slack = 1.0, 5.0
    engine = shared_engine(EngineSettings(seed=5, max_batch=2, random_model_frames=1500))  # as test_engine.py's
    async with limited_server(chorus, engine=engine, stream_pause_timeout=pause, idle_timeout=120.0) as (_, port):
        streams = [await connect(port) for _ in range(3)]
        for _, writer in streams:
            await async_write_event(SynthesizeStart().event(), writer)
            await async_write_event(SynthesizeChunk(OPENING).event(), writer)
        await until(lambda: engine.stats().running == 2, TIMEOUT, "the streams never filled the batch")
        reader, writer = await connect(port)
        await async_write_event(Synthesize("Hi.").event(), writer)
        first = await asyncio.wait_for(async_read_event(reader), pause + slack)
        assert first.type == "audio-start"
        (rest,) = await read_replies(reader, 1)
        assert len(audio([first, *rest])) > 0
        for stream_reader, _ in streams:
            (reply,) = await read_replies(stream_reader, 1, last_type="synthesize-stopped")
            assert_ended_by_timeout(reply, "server.stream_pause_timeout")
        for _, stream_writer in [*streams, (reader, writer)]:
            stream_writer.close()
    await until(lambda: engine.stats().blocks_used == 0, 10, "KV blocks still held")
