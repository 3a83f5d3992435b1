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

`HttpServer` is that machinery without the routes: the voice studio (wyoming_chorus/studio) serves its page on a
listener of its own with it. Its answers may take longer than a probe's (an upload, a preview being spoken): a route
moves the exchange's deadline with `HttpRequest.allow`, reads a body with `HttpRequest.body` (bounded), and may
answer with an async iterator of bytes, sent chunked as it comes.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

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

TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    status: str                             # "200 OK"
    content_type: str
    body: bytes | AsyncGenerator[bytes, None]  # a generator is sent chunked, each piece as it comes
    headers: tuple[tuple[str, str], ...] = ()


class Refused(Exception):
    """A request refused before its body was read (over the limits, or not allowed), and its answer."""

    def __init__(self, status: str, body: bytes, content_type: str = TEXT):
        super().__init__(status)
        self.answer = Answer(status, content_type, body)


class HttpRequest:
    """One request: its line and headers (names in lower case), and its body still unread in `reader`."""

    def __init__(self, method: str, target: str, headers: dict[str, str], reader: asyncio.StreamReader,
                 deadline: asyncio.Timeout, peer: str | None = None):
        self.method = method
        self.peer = peer  # the client's address
        self.via_proxy = False  # set by a server that trusts a proxy in front of it
        self.target = target
        self.path, _, self.query = target.partition("?")
        self.headers = headers
        self._reader = reader
        self._deadline = deadline

    def allow(self, seconds: float) -> None:
        """The exchange may go on until `seconds` from now (instead of REQUEST_DEADLINE from its start)."""
        self._deadline.reschedule(asyncio.get_running_loop().time() + seconds)

    async def body(self, limit: int) -> bytes:
        """The body, as long as its Content-Length says; a body over `limit` bytes is refused before it is read."""
        if "transfer-encoding" in self.headers:
            raise Refused("411 Length Required", b"send the body with a Content-Length\n")
        length = self.headers.get("content-length", "")
        if not length.isdigit():
            raise Refused("411 Length Required", b"send the body with a Content-Length\n")
        if int(length) > limit:
            raise Refused("413 Content Too Large", f"the body is over the limit of {limit} bytes\n".encode())
        return await self._reader.readexactly(int(length))


class HttpServer:
    """Answers requests on `listener` (bound and listening) with `_respond`, on an event loop in a thread of its own;
    `name` and `path` say what it serves in the log line at start."""

    def __init__(self, listener: socket.socket, name: str, path: str = "/"):
        self._listener = listener
        self._name = name
        self._path = path
        self._open: dict[asyncio.StreamWriter, None] = {}  # oldest first
        self._thread = threading.Thread(target=self._main, name=f"{name}-http")
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    @property
    def port(self) -> int:
        """The bound port (the configured one, or the one the OS picked for port 0)."""
        return self._listener.getsockname()[1]

    def start(self) -> None:
        self._thread.start()
        self._started.wait()
        if self._stopping is None:
            raise RuntimeError(f"the {self._name} server did not start")
        host = self._listener.getsockname()[0]
        _LOG.info("%s on http://%s:%s%s", self._name, f"[{host}]" if ":" in host else host, self.port, self._path)

    def stop(self) -> None:
        """Closes the listener and every connection; returns once the thread has ended."""
        if self._loop is not None and self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread.is_alive():
            self._thread.join()

    async def _respond(self, request: HttpRequest) -> Answer:
        raise NotImplementedError

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
            async with asyncio.timeout(REQUEST_DEADLINE) as deadline:
                refused = False
                try:
                    answer = await self._answer(reader, writer, deadline)
                except Refused as error:
                    answer, refused = error.answer, True
                await _send(writer, answer)
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

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      deadline: asyncio.Timeout) -> Answer:
        line, headers = await _read_request(reader)
        request_line = line.split()
        if len(request_line) != 3:
            return Answer("400 Bad Request", TEXT, b"bad request\n")
        method, target, _version = request_line
        try:
            peer = (writer.get_extra_info("peername") or (None,))[0]
            return await self._respond(HttpRequest(method, target, headers, reader, deadline, peer))
        except (Refused, TimeoutError, ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            raise
        except Exception:  # a bug: the client gets a 500, not a connection that hangs until its deadline
            _LOG.exception("%s %s failed", method, target)
            return Answer("500 Internal Server Error", TEXT, b"internal error; see the server's log\n")


class MetricsServer(HttpServer):
    """Serves `metrics` and the `alive()` probe (called in the server's thread) on `listener`, a socket bound and
    listening before the model loads (wyoming_chorus.wyoming.listeners)."""

    def __init__(self, metrics: Metrics, alive: Callable[[], bool], listener: socket.socket):
        super().__init__(listener, "metrics", "/metrics")
        self._metrics = metrics
        self._alive = alive
        self._render_turn = asyncio.Lock()  # renders one at a time, spaced by RENDER_SHARE (binds to its loop on use)
        self._next_render = 0.0

    async def _respond(self, request: HttpRequest) -> Answer:
        if request.method != "GET":
            return Answer("405 Method Not Allowed", TEXT, b"only GET\n")
        if request.path == "/metrics":
            return Answer("200 OK", CONTENT_TYPE_LATEST, await self._render())
        if request.path == "/health":
            if self._alive():
                return Answer("200 OK", TEXT, b"ok\n")
            return Answer("503 Service Unavailable", TEXT, b"engine loop stopped\n")
        return Answer("404 Not Found", TEXT, b"not found: try /metrics or /health\n")

    async def _render(self) -> bytes:
        async with self._render_turn:
            await asyncio.sleep(self._next_render - time.monotonic())  # a negative delay does not wait
            started = time.monotonic()
            body = self._metrics.exposition()
            ended = time.monotonic()
            self._next_render = ended + (ended - started) * (1 / RENDER_SHARE - 1)
            return body


async def _send(writer: asyncio.StreamWriter, answer: Answer) -> None:
    """The answer, then the connection is done with (every exchange closes it: nothing here needs keep-alive)."""
    length = f"Content-Length: {len(answer.body)}" if isinstance(answer.body, bytes) else "Transfer-Encoding: chunked"
    extra = "".join(f"{name}: {value}\r\n" for name, value in answer.headers)
    head = (f"HTTP/1.1 {answer.status}\r\nContent-Type: {answer.content_type}\r\n{extra}"
            f"{length}\r\nConnection: close\r\n\r\n")
    if isinstance(answer.body, bytes):
        writer.write(head.encode("latin-1") + answer.body)
        await writer.drain()
        return
    writer.write(head.encode("latin-1"))
    # Closed however the exchange ends (the client left, the deadline passed): a body that holds work, such as a
    # voice being spoken, stops it.
    async with contextlib.aclosing(answer.body) as pieces:
        async for piece in pieces:
            if piece:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str]]:
    """The request line and the headers after it (names in lower case; a repeated header keeps its last value)."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise Refused("400 Bad Request", b"request line too long\n") from None
    size = 0
    headers: dict[str, str] = {}
    while True:
        try:
            header = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise Refused("431 Request Header Fields Too Large", b"header line too long\n") from None
        size += len(header)
        if size > MAX_HEADERS:
            raise Refused("431 Request Header Fields Too Large", b"headers too large\n")
        if not header.strip():
            return line.decode("latin-1"), headers
        name, colon, value = header.decode("latin-1").partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
