"""A reply that outlasts a long tool call (issue 38): Home Assistant's LLM agent stops writing mid-reply while a tool
runs (a web search, a camera snapshot: 25-60 s were seen), then sends the rest. The paused stream must hold no KV
blocks while it waits, and its pause limit must outlast the tool, so that the sentence after it is spoken.

Over real TCP with wyoming's own client, against the session's engine (tiny model). The 60 s tool call is played in
small: a real pause of GAP seconds against the default limits scaled by GAP / 60 s, so the test fails exactly when the
default pause limit would cut a 60 s tool call short.
"""
from __future__ import annotations

import asyncio
import time

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop

from wyoming_chorus.config import ServerSettings
from wyoming_chorus.wyoming.reply import RELEASE_AFTER

from helpers import HOST, TIMEOUT, audio
from server_limits import limited_server, until

pytestmark = pytest.mark.asyncio

TOOL_CALL = 60.0  # the longest tool call, in seconds
GAP = 4 * RELEASE_AFTER  # the pause the test really makes: well past the time a paused request keeps its blocks
# Mid-sentence, as an LLM that announces its tool in a clause does: the request speaking it waits for more text.
BEFORE = "Let me look that up on the web for "
AFTER = "you. It is sunny and warm today."


async def test_the_sentence_after_a_long_tool_call_is_spoken_and_the_pause_holds_no_kv_blocks(chorus):
    defaults, scale = ServerSettings(), GAP / TOOL_CALL
    engine = chorus.service.engine
    sentences = engine.metrics.sentences_total.labels(status="ok")
    spoken_before = sentences._value.get()
    pause_limit = defaults.stream_pause_timeout * scale
    async with limited_server(chorus, stream_pause_timeout=pause_limit,
                              stream_max_seconds=defaults.stream_max_seconds * scale) as (_, port):
        async with AsyncTcpClient(HOST, port) as client:
            events: list[Event] = []

            async def read() -> None:
                while (event := await client.read_event()) is not None:
                    events.append(event)
                    if event.type == "synthesize-stopped":
                        return

            reader = asyncio.create_task(read())
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(BEFORE).event())
            paused_at = time.monotonic()
            await until(lambda: engine.stats().blocks_used > 0, TIMEOUT, "the words before the pause never started")
            # The tool runs: the request finishes the words it has and gives its blocks back while the stream is open
            # (it may take long on a loaded machine, never as long as the pause limit).
            await until(lambda: engine.stats().blocks_used == 0 and engine.stats().awaiting_text == 0,
                        paused_at + pause_limit - time.monotonic(), "the paused stream still holds KV blocks")
            assert not reader.done() and "error" not in [e.type for e in events], events
            heard_before = len(events)
            await asyncio.sleep(max(0.0, paused_at + GAP - time.monotonic()))
            await client.write_event(SynthesizeChunk(AFTER).event())
            await client.write_event(SynthesizeStop().event())
            await asyncio.wait_for(reader, TIMEOUT)
    types = [e.type for e in events]
    assert "error" not in types and types[-2:] == ["audio-stop", "synthesize-stopped"], types
    assert len(audio(events[:-1])) > 0
    assert len(audio([events[0], *events[heard_before:-1]])) > 0, "nothing was spoken after the tool call"
    assert sentences._value.get() == spoken_before + 2  # the words before the tool call, and the sentence after it
    assert engine.stats().blocks_used == 0
