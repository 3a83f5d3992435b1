"""The tests' client and server helpers: a Wyoming request over real TCP and its reply read back, a Describe, the
one server (in-process, on its own loop: chorus_tools.servers.ServiceThread) and free-port probe the tools use too,
and a rewrite of a file the server re-reads when its stamp changes."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe, Info

from chorus_tools.probes import free_port
from chorus_tools.servers import ServiceThread

__all__ = ["HOST", "SENTENCE", "TIMEOUT", "ServiceThread", "audio", "describe", "free_port", "read_until", "send",
           "touch_later"]

HOST = "127.0.0.1"
# How long a test waits for the server's next event before calling it a hang. Generous on purpose: CI shares 2 cores
# with other work (load averages of 6-14 were seen), where eight rooms of the tiny model took over 60 s; a real hang
# still fails, only later. No test asserts speed (benchmarks in tools/ do).
TIMEOUT = 180.0
SENTENCE = "Hi there."  # the tiny model speaks up to its frame cap, set by the text length: keep texts short


async def read_until(client: AsyncTcpClient, last_type: str) -> list[Event]:
    """Events up to and including the first `last_type` (or until the server closes the connection)."""
    events: list[Event] = []

    async def read() -> None:
        while (event := await client.read_event()) is not None:
            events.append(event)
            if event.type == last_type:
                return

    await asyncio.wait_for(read(), TIMEOUT)
    return events


async def send(port: int, *events: Event, last_type: str = "audio-stop") -> list[Event]:
    async with AsyncTcpClient(HOST, port) as client:
        for event in events:
            await client.write_event(event)
        return await read_until(client, last_type)


def audio(events: list[Event]) -> bytes:
    """The PCM of one well-formed reply: audio-start, audio-chunk..., audio-stop."""
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types[-1] == "audio-stop", types
    assert set(types[1:-1]) <= {"audio-chunk"}, types
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (24000, 2, 1)
    return b"".join(AudioChunk.from_event(e).audio for e in events[1:-1])


async def describe(port: int) -> Info:
    """The server's answer to a Describe."""
    async with AsyncTcpClient(HOST, port) as client:
        await client.write_event(Describe().event())
        while not Info.is_type((event := await asyncio.wait_for(client.read_event(), 30)).type):
            pass
    return Info.from_event(event)


def touch_later(path: Path, text: str) -> None:
    """Rewrite a file so that its stamp changes even where mtimes are coarse."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))
