"""The metrics HTTP server: GET /metrics (Prometheus text format) and GET /health (200 "ok" while the engine is alive,
else 503), on an asyncio loop of its own in one thread of its own.

Off the serving loop: scrapes on the serving loop slowed replies by 20-45% under a /metrics flood (~1,200/s), and a
probe must not wait for a busy serving loop (/health reports the engine, whose thread is what can die).

Why asyncio and not prometheus_client's server (a ThreadingWSGIServer) or http.server's ThreadingHTTPServer: both
start a thread per connection without bound, time out per recv() rather than per request (a client sending a byte a
second is never cut off), fix their line limit (64 KiB) in module globals, and prometheus_client's answers every path
with the metrics (no /health, no 404). Bounding all that means overriding most of them. Here each limit is a line or
two: the StreamReader's limit for a line, asyncio.timeout for a deadline over the whole exchange, an ordered dict of
the open connections for their number; and it is one thread whatever the load.

Off its loop is not yet off the engine's time: rendering every metric holds the interpreter lock that the engine
thread needs between its infers, and a flood of scrapes would still slow every room. So renders are spaced to take
at most RENDER_SHARE of the wall time: a Prometheus scrape every few seconds never waits, and a flood waits its turn
(within the request deadline) instead of taking the engine's time.

The limits are constants, not settings: a scrape or a probe is one short request answered in milliseconds, so they
only ever bite on clients that are broken or hostile.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from wyoming_chorus.metrics import Metrics

_LOG = logging.getLogger(__name__)

REQUEST_DEADLINE = 5.0  # seconds for a whole exchange: request line, headers and answer
MAX_LINE = 8 * 1024  # bytes in the request line or one header line (a scrape's are well under 1 KiB)
MAX_HEADERS = 64 * 1024  # bytes in all header lines together
# Connections open at once. One more closes the oldest: it is nearest its deadline, and refusing newcomers instead
# would let a few slow clients lock out the probe, whose request comes whole at once and is answered at once.
MAX_CONNECTIONS = 16
RENDER_SHARE = 0.05  # most of the wall time spent rendering /metrics (a render of this registry takes ~1 ms)

_TEXT = "text/plain; charset=utf-8"
_Answer = tuple[str, str, bytes]  # status line, content type, body


class _Refused(Exception):
    """A request over the limits, and its answer."""

    def __init__(self, status: str, body: bytes):
        super().__init__(status)
        self.answer: _Answer = (status, _TEXT, body)


class MetricsServer:
    """Serves `metrics` and the `alive()` probe (called in the server's thread) on `listener`, a socket bound and
    listening before the model loads (wyoming_chorus.wyoming.listeners)."""

    def __init__(self, metrics: Metrics, alive: Callable[[], bool], listener: socket.socket):
        self._metrics = metrics
        self._alive = alive
        self._listener = listener
        self._open: dict[asyncio.StreamWriter, None] = {}  # oldest first
        self._thread = threading.Thread(target=self._main, name="metrics-http")
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._render_turn = asyncio.Lock()  # renders one at a time, spaced by RENDER_SHARE (binds to its loop on use)
        self._next_render = 0.0

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one the OS picked for port 0)."""
        return self._listener.getsockname()[1]

    def start(self) -> None:
        self._thread.start()
        self._started.wait()
        if self._stopping is None:
            raise RuntimeError("the metrics server did not start")
        host = self._listener.getsockname()[0]
        _LOG.info("metrics on http://%s:%s/metrics", f"[{host}]" if ":" in host else host, self.port)

    def stop(self) -> None:
        """Closes the listener and every connection; returns once the thread has ended."""
        if self._loop is not None and self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread.is_alive():
            self._thread.join()

    def _main(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        try:
            server = await asyncio.start_server(self._serve, sock=self._listener, limit=MAX_LINE)
            self._loop, self._stopping = asyncio.get_running_loop(), (stopping := asyncio.Event())
        finally:
            self._started.set()
        try:
            await stopping.wait()
        finally:
            server.close()
            for writer in self._open:
                writer.transport.abort()
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._open) >= MAX_CONNECTIONS:
            oldest = next(iter(self._open))
            del self._open[oldest]
            oldest.transport.abort()
        self._open[writer] = None
        try:
            async with asyncio.timeout(REQUEST_DEADLINE):
                refused = False
                try:
                    answer = await self._respond((await _read_request(reader)).split())
                except _Refused as error:
                    answer, refused = error.answer, True
                status, content_type, body = answer
                head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
                writer.write(head.encode("latin-1") + body)
                await writer.drain()
                if refused:
                    # Take in what the client is still sending before closing: a close with input unread resets
                    # the connection, and the client can lose the answer with it.
                    writer.write_eof()
                    while await reader.read(MAX_LINE):
                        pass
            writer.close()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            writer.transport.abort()  # too slow, or gone: nothing left to say
        finally:
            self._open.pop(writer, None)

    async def _respond(self, request_line: list[str]) -> _Answer:
        if len(request_line) != 3:
            return "400 Bad Request", _TEXT, b"bad request\n"
        method, target, _version = request_line
        path = target.split("?", 1)[0]
        if method != "GET":
            return "405 Method Not Allowed", _TEXT, b"only GET\n"
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, await self._render()
        if path == "/health":
            if self._alive():
                return "200 OK", _TEXT, b"ok\n"
            return "503 Service Unavailable", _TEXT, b"engine loop stopped\n"
        return "404 Not Found", _TEXT, b"not found: try /metrics or /health\n"


    async def _render(self) -> bytes:
        async with self._render_turn:
            await asyncio.sleep(self._next_render - time.monotonic())  # a negative delay does not wait
            started = time.monotonic()
            body = self._metrics.exposition()
            ended = time.monotonic()
            self._next_render = ended + (ended - started) * (1 / RENDER_SHARE - 1)
            return body


async def _read_request(reader: asyncio.StreamReader) -> str:
    """The request line, once the headers after it (none of which matter here) have arrived."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise _Refused("400 Bad Request", b"request line too long\n") from None
    size = 0
    while True:
        try:
            header = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise _Refused("431 Request Header Fields Too Large", b"header line too long\n") from None
        size += len(header)
        if size > MAX_HEADERS:
            raise _Refused("431 Request Header Fields Too Large", b"headers too large\n")
        if not header.strip():
            return line.decode("latin-1")
