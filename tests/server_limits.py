"""A ChorusServer with small limits (server.* keys) on the session's engine, in the test's own event loop, and the
client side of talking to it over real sockets: connecting (with a small receive window if asked), reading replies
back, and waiting for the server's state to change."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import time
from collections.abc import AsyncIterator

from wyoming.event import Event, async_read_event

from wyoming_chorus.config import ServerSettings
from wyoming_chorus.speech.speech_engine import SpeechEngine
from wyoming_chorus.wyoming.connections import ChorusServer
from wyoming_chorus.wyoming.listeners import bind_listener

from helpers import HOST, TIMEOUT, free_port

PROMPT = 2.0  # seconds within which the server answers something it should answer at once


@contextlib.asynccontextmanager
async def limited_server(chorus, sndbuf: int | None = None, engine: SpeechEngine | None = None,
                         uri: str | None = None, **limits) -> AsyncIterator[tuple[ChorusServer, int]]:
    """A server with `limits` (server.* keys) on the session's engine (or `engine`), at `uri` (default: a free
    loopback port); `sndbuf` shrinks the kernel's send buffer of the connections it accepts (they inherit it from the
    listener), so that a client that does not read is felt in the server's own buffer at once."""
    port = free_port()
    listener = bind_listener(uri or f"tcp://{HOST}:{port}", "server.uri", "--uri")
    if sndbuf is not None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    engine_settings = chorus.service.settings.engine
    server = ChorusServer(engine or chorus.service.engine, listener, max_text_length=engine_settings.max_text_length,
                          samples_per_chunk=engine_settings.samples_per_chunk,
                          limits=dataclasses.replace(ServerSettings(), **limits))
    await server.start()
    try:
        yield server, port
    finally:
        await server.stop(timeout=5.0)


async def connect(port: int, rcvbuf: int | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    if rcvbuf is None:
        return await asyncio.open_connection(HOST, port)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connecting: it sets the TCP window
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
    return await asyncio.open_connection(sock=sock)


async def until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def read_replies(reader: asyncio.StreamReader, count: int, last_type: str = "audio-stop") -> list[list[Event]]:
    """`count` replies, each up to and including `last_type`."""
    replies: list[list[Event]] = [[]]
    while len(replies) <= count:
        event = await asyncio.wait_for(async_read_event(reader), TIMEOUT)
        assert event is not None, f"closed after {len(replies) - 1} replies"
        replies[-1].append(event)
        if event.type == last_type:
            replies.append([])
    return replies[:-1]
