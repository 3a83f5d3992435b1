"""A streamed sentence is spoken once its end has arrived, while the client pauses (Home Assistant's tool calls).

Over real TCP with wyoming's own client, against the real engine (tiny model), with the timings of issue 7: the text
before a tool call, a pause, then the rest joined on with no space ("...for you.It is ...").
"""
from __future__ import annotations

import asyncio
import time

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop

from wyoming_chorus.errors import InvalidText
from wyoming_chorus.speech.sentences import AMBIGUOUS_GRACE, GRACE
from wyoming_chorus.wyoming.reply import reply_text as Reply

from helpers import HOST, TIMEOUT, audio

pytestmark = pytest.mark.asyncio


async def stream_with_pauses(port: int, schedule: list[tuple[float, str]]) -> tuple[list[Event], list[float], float]:
    """Sends each chunk at its time (s from synthesize-start), then synthesize-stop; reads the reply meanwhile.

    Returns the reply's events up to synthesize-stopped, the time each chunk was sent and when the first audio-chunk
    arrived (all in s from synthesize-start)."""
    events: list[Event] = []
    sent: list[float] = []
    first_audio = asyncio.get_running_loop().create_future()
    async with AsyncTcpClient(HOST, port) as client:
        started = time.monotonic()

        async def read() -> None:
            while (event := await client.read_event()) is not None:
                events.append(event)
                if event.type == "audio-chunk" and not first_audio.done():
                    first_audio.set_result(time.monotonic() - started)
                if event.type == "synthesize-stopped":
                    return

        reader = asyncio.create_task(read())
        await client.write_event(SynthesizeStart().event())
        for at, text in schedule:
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            sent.append(time.monotonic() - started)
            await client.write_event(SynthesizeChunk(text).event())
        await client.write_event(SynthesizeStop().event())
        await asyncio.wait_for(reader, TIMEOUT)
    assert first_audio.done(), [e.type for e in events]
    return events, sent, first_audio.result()


def assert_one_reply(events: list[Event]) -> None:
    assert [e.type for e in events[-2:]] == ["audio-stop", "synthesize-stopped"]
    assert len(audio(events[:-1])) > 0  # one audio-start..audio-stop for the whole stream


async def test_the_sentence_before_a_tool_call_is_spoken_while_the_tool_runs(chorus):
    # Home Assistant starts the stream at the tool call and joins the messages around it with nothing between.
    events, sent, first_audio = await stream_with_pauses(chorus.port, [
        (0.0, "Let me check the weather for you."),
        (3.0, "It is sunny and 21.5 degrees."),
    ])
    assert first_audio < sent[1], f"first audio at {first_audio:.2f} s, the rest was sent at {sent[1]:.2f} s"
    assert_one_reply(events)


async def test_a_complete_first_chunk_is_spoken_before_the_next_chunk(chorus):
    # Issue 7's schedule (0, 3, 6, 9 s) shortened to keep the suite fast.
    events, sent, first_audio = await stream_with_pauses(chorus.port, [
        (0.0, "Hi there."),
        (1.0, " It is sunny."),
        (2.0, " Bye now."),
    ])
    assert first_audio < sent[1], f"first audio at {first_audio:.2f} s, the second chunk was sent at {sent[1]:.2f} s"
    assert_one_reply(events)


# ---- Reply on its own (no engine) ---------------------------------------------------------------------------------

async def take(reply: Reply, count: int, timeout: float) -> list[str]:
    sentences = reply.sentences()
    return [await asyncio.wait_for(anext(sentences), timeout) for _ in range(count)]


async def test_reply_releases_a_held_sentence_once_the_grace_has_passed():
    reply = Reply(None, streaming=True, max_text_length=1000)
    reply.add("Let me check the weather for you.")
    started = time.monotonic()
    assert await take(reply, 1, timeout=2.0) == ["Let me check the weather for you."]
    assert GRACE * 0.9 <= time.monotonic() - started < GRACE + 0.5


async def test_reply_holds_a_possible_decimal_for_the_longer_grace_and_joins_the_rest():
    reply = Reply(None, streaming=True, max_text_length=1000)
    taking = asyncio.create_task(take(reply, 1, timeout=5.0))
    reply.add("It is 21.")
    await asyncio.sleep((GRACE + AMBIGUOUS_GRACE) / 2)  # longer than a plain sentence end is held
    assert not taking.done()
    reply.add("5 degrees.")
    assert await taking == ["It is 21.5 degrees."]


async def test_reply_new_text_restarts_the_grace():
    reply = Reply(None, streaming=True, max_text_length=1000)
    taking = asyncio.create_task(take(reply, 1, timeout=5.0))
    reply.add("Call Dr.")
    await asyncio.sleep(GRACE)
    reply.add(" Smith.")  # a plain sentence end now: held for the short grace only
    started = time.monotonic()
    assert await taking == ["Call Dr. Smith."]
    assert time.monotonic() - started < GRACE + 0.5


async def test_reply_one_shot_text_waits_for_no_grace():
    reply = Reply(None, streaming=False, max_text_length=1000)
    reply.add("It is 21. Call Dr.")
    reply.finish()
    started = time.monotonic()
    assert [s async for s in reply.sentences()] == ["It is 21.", "Call Dr."]
    assert time.monotonic() - started < GRACE / 2


async def test_reply_too_long_text_still_fails():
    reply = Reply(None, streaming=True, max_text_length=10)
    reply.add("Hello there.")
    with pytest.raises(InvalidText, match="longer than 10"):
        await take(reply, 1, timeout=1.0)
