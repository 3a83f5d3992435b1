"""Accepting Wyoming connections: the listener, server.max_connections and server.max_connections_per_peer (an idle
connection closed to make room, a busy one never), the shutdown, and hanging up a connection with its last `error`."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections import Counter

from wyoming.error import Error
from wyoming.event import async_write_event

from wyoming_chorus.config import ServerSettings
from wyoming_chorus.errors import RequestFailed
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.speech.speech_engine import SpeechEngine
from wyoming_chorus.wyoming.event_reader import MAX_HEADER_BYTES, BadEvent
from wyoming_chorus.wyoming.handler import ChorusHandler
from wyoming_chorus.wyoming.info import program_version

_LOG = logging.getLogger(__name__)

# How long a shutdown waits for the `error` and audio-stop of replies it aborts to reach their clients.
_END_REPLY_TIMEOUT = 2.0
# How long a closed connection may take to hand its last bytes to a client before it is dropped: a client that does
# not read would otherwise keep the socket, and the audio buffered for it, for ever.
_CLOSE_GRACE = 5.0
# How long the `error` that ends a connection may take to be written, and then the client's last input to be read.
_HANG_UP_TIMEOUT = 1.0


class ChorusServer:
    """Serves Wyoming TTS on a bound listening socket through one shared engine; no lock between connections.

    It owns its listener (rather than wyoming's AsyncServer, which binds only when it starts) so that the socket is
    bound before the model loads, and it keeps every connection's handler so that a shutdown can end each reply.
    """

    def __init__(self, engine: SpeechEngine, listener: socket.socket, *, max_text_length: int,
                 samples_per_chunk: int, metrics: Metrics | None = None, limits: ServerSettings | None = None):
        self.engine = engine
        self.metrics = metrics or Metrics()
        self.max_text_length = max_text_length
        self.samples_per_chunk = samples_per_chunk
        self.limits = limits or ServerSettings()
        self.version = program_version()
        self._listener = listener
        self._server: asyncio.Server | None = None
        self._handlers: set[ChorusHandler] = set()
        self._closing = False
        self._refusing = False  # at max_connections: said once in the log, not once per refused connection
        self._refused_hosts: set[str] = set()  # hosts refused at max_connections_per_peer, said once each in the log
        self._crowded_hosts: set[str] = set()  # hosts at max_connections_per_peer losing idle connections, said once

    async def start(self) -> None:
        # The stream's line limit bounds what a header line can make it buffer (readuntil stops there).
        line_limit = min(MAX_HEADER_BYTES, self.limits.max_event_bytes)
        if self._listener.family == socket.AF_UNIX:
            self._server = await asyncio.start_unix_server(self._connect, sock=self._listener, limit=line_limit)
        else:
            self._server = await asyncio.start_server(self._connect, sock=self._listener, limit=line_limit)

    async def stop(self, timeout: float) -> None:
        """Refuse new connections, let running replies finish for up to `timeout` s, then end the rest with an
        `error` and their audio-stop (and synthesize-stopped), and close every connection."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        busy = {h: asyncio.create_task(h.wait_idle()) for h in self._handlers}
        if busy:
            await asyncio.wait(busy.values(), timeout=timeout)
        unfinished = [h for h, task in busy.items() if not task.done()]
        for task in busy.values():
            task.cancel()
        if unfinished:
            _LOG.warning("aborting %d replies still running after %.1f s", len(unfinished), timeout)
            shutdown = RequestFailed("the server is shutting down")
            await asyncio.wait([asyncio.create_task(h.end_replies(shutdown)) for h in unfinished],
                               timeout=_END_REPLY_TIMEOUT)
        handlers = list(self._handlers)
        for handler in handlers:
            await handler.stop()
        closing = [asyncio.create_task(h.wait_closed()) for h in handlers]
        if closing:
            await asyncio.wait(closing, timeout=timeout)

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """asyncio's callback for a new connection. Nothing may escape it: asyncio would log it as unhandled."""
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:  # the loop is closing; Python 3.11's callback would choke on a cancelled task
            writer.transport.abort()
        except Exception:  # a bug: one traceback, and this connection closes
            _LOG.exception("connection failed")
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.close()
            return
        host = _host(writer)
        refusal = await self._make_room(host)
        if refusal is not None:
            await _refuse(reader, writer, refusal)
            return
        handler = ChorusHandler(reader, writer, self, host)
        self._handlers.add(handler)
        bad: BadEvent | None = None
        try:
            bad = await handler.run()
        finally:
            if bad is not None:
                await _hang_up(reader, writer, str(bad), bad.code)
            _close(writer)

    async def _make_room(self, host: str) -> str | None:
        """Room for a new connection from `host`, as load balancers make it: at server.max_connections_per_peer its
        longest-idle connection is closed, at server.max_connections the longest-idle one of the host holding the
        most; so a client that leaks connections costs itself idle sockets, and Home Assistant (one host, or many
        behind one NAT) is never locked out by its own. Returns why the connection is refused when every connection
        that could make room is busy (a reply queued, spoken or streamed)."""
        per_peer = self.limits.max_connections_per_peer
        own = [handler for handler in self._handlers if handler.host == host]
        if len(own) >= per_peer:
            if not await self._close_idle(own):
                if host not in self._refused_hosts:
                    _LOG.warning("%s has %d connections open and busy (server.max_connections_per_peer): refusing "
                                 "its new ones", host, per_peer)
                self._refused_hosts.add(host)
                return f"{host} has {per_peer} connections open already, the most one host may"
            if host not in self._crowded_hosts:
                _LOG.info("%s has %d connections open (server.max_connections_per_peer): closing its longest-idle "
                          "ones to make room for its new ones", host, per_peer)
            self._crowded_hosts.add(host)
        else:
            self._crowded_hosts.discard(host)
        self._refused_hosts.discard(host)
        if self.connections >= self.limits.max_connections:
            hosts = Counter(handler.host for handler in self._handlers)
            if not await self._close_idle(list(self._handlers), hosts):
                if not self._refusing:
                    _LOG.warning("%d connections are open and busy (server.max_connections): refusing new ones",
                                 self.connections)
                self._refusing = True
                return f"the server has {self.limits.max_connections} connections open already"
        if self._refusing:
            _LOG.info("accepting new connections again")
            self._refusing = False
        return None

    async def _close_idle(self, handlers: list[ChorusHandler], hosts: Counter[str] | None = None) -> bool:
        """Closes the longest-idle connection among `handlers` (of the host holding most of `hosts`, if given);
        False when none is idle. It stops counting at once; the client sees the connection close, as after
        server.idle_timeout."""
        idle = [(since, handler) for handler in handlers if (since := handler.idle_since) is not None]
        if not idle:
            return False
        since, victim = min(idle, key=lambda item: (-hosts[item[1].host] if hosts else 0, item[0]))
        _LOG.debug("closing a connection of %s idle for %.1f s to make room", victim.host, time.monotonic() - since)
        self.forget(victim)
        await victim.stop()
        return True

    def forget(self, handler: ChorusHandler) -> None:
        self._handlers.discard(handler)

    @property
    def connections(self) -> int:
        """Connections being served (refused ones are never counted)."""
        return len(self._handlers)


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, text: str, code: str) -> None:
    """The `error` that ends a connection (best effort: a client that does not read never gets it), then the end of
    our side; what the client still sends is read and dropped for a moment, because closing a socket with unread
    input sends a TCP reset, which would destroy the error on its way."""
    with contextlib.suppress(OSError):  # TimeoutError included
        async with asyncio.timeout(_HANG_UP_TIMEOUT):
            await async_write_event(Error(text=text, code=code).event(), writer)
            writer.write_eof()
            while await reader.read(1 << 16):
                pass


async def _refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, text: str) -> None:
    """A connection beyond the limits: an `error` ("too-many-connections"), then the close."""
    await _hang_up(reader, writer, text, "too-many-connections")
    _close(writer)


def _close(writer: asyncio.StreamWriter) -> None:
    """Close once the buffered bytes are out, or drop them after _CLOSE_GRACE. The drop is called off once the
    transport has closed: abort() of a transport that closed after its buffer drained fails inside asyncio (its loop
    is gone by then), which the loop logs as "Exception in callback"."""
    writer.close()
    drop = asyncio.get_running_loop().call_later(_CLOSE_GRACE, writer.transport.abort)

    def closed(task: asyncio.Future) -> None:
        drop.cancel()
        if not task.cancelled():
            task.exception()  # retrieved: a reset while closing is no news

    # The task is held by the transport until it closes (its close waiter) and by `drop` until then.
    asyncio.ensure_future(writer.wait_closed()).add_done_callback(closed)


def _host(writer: asyncio.StreamWriter) -> str:
    """Who is connected, as max_connections_per_peer counts them: the IP address; every local socket is one."""
    peer = writer.get_extra_info("peername")
    return peer[0] if isinstance(peer, tuple) else "a local socket"
