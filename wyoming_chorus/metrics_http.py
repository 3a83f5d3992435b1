"""The metrics HTTP server: GET /metrics (Prometheus text format) and GET /health (200 "ok" while the engine is alive,
else 503), on an event loop in a thread of its own; and `HttpServer`, that machinery without the routes, on which the
voice studio (wyoming_chorus/studio) serves its page on a listener of its own. Off the serving loop: scrapes on it
slowed replies by 20-45% under a flood, and a probe must not wait for a busy serving loop.

Why aiohttp: HTTP itself (request lines, headers, chunked bodies) is not this project's business, and the server
hand-written on asyncio streams before logged tracebacks on client resets and read uploads into memory. aiohttp is
Home Assistant's own HTTP library (its web server, its ingress proxy), well kept, with a C parser. (prometheus_client's
server and http.server start a thread per connection without bound and time out per recv() only.) Added here:
- connections: at most MAX_CONNECTIONS, MAX_PER_PEER from one address. At a limit the oldest idle one (no request in
  progress; one begun and never finished is idle) makes room, as the balancers do: a leaking client costs itself
  idle sockets, and an upload in progress, or Home Assistant's ingress proxy (one address for every user), is never
  cut for newcomers. If none is idle the newcomer is closed.
- deadlines: the request line and headers within REQUEST_DEADLINE of the connection (aiohttp's keep-alive timer runs
  from its start), the exchange within REQUEST_DEADLINE after, unless a route allows more (`HttpRequest.allow`).
- bodies: read by the route within a bound it sets (`HttpRequest.pieces`, `body`, `multipart`), never before, at
  most READ_RATE (a LAN's pace: an upload over loopback would otherwise take a core and the interpreter lock from the
  rooms' replies); of a refused body at most LINGER_BYTES within LINGER_SECONDS are taken in before the close, so
  that the client reads the refusal rather than a reset, without reading a flood whole.
- quiet: a malformed request or a client gone mid-exchange is the client's doing: one DEBUG line (aiohttp's protocol
  log). A route's own bug is a 500 with one logged traceback. Rendering every metric holds the interpreter lock the
  engine needs: renders take at most RENDER_SHARE of the wall time, so a flood of scrapes waits its turn.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import MultipartReader, web
from aiohttp.web_protocol import RequestHandler
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from wyoming_chorus.metrics import Metrics

_LOG = logging.getLogger(__name__)

REQUEST_DEADLINE = 5.0  # seconds for the request line and headers, and for a whole exchange unless allowed more
MAX_LINE = 8 * 1024  # bytes in the request line or one header line (a scrape's are well under 1 KiB)
MAX_HEADERS = 64 * 1024  # bytes in all header lines together
MAX_CONNECTIONS = 16  # open at once; one more closes the oldest idle one
MAX_PER_PEER = 8  # from one address
LINGER_SECONDS, LINGER_BYTES = 2.0, 1 << 20  # of a refused body's rest, taken in before the close
READ_RATE = 16 << 20  # bytes a second read from a body (100 Mbit/s Ethernet is 12 MB/s)
STOP_SECONDS = 2.0  # for exchanges in progress to end when the server stops (a change being written)
CHUNK = 64 * 1024  # bytes read at a time from a body
RENDER_SHARE = 0.05  # most of the wall time spent rendering /metrics (a render of this registry takes ~1 ms)

TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Answer:
    status: str                             # "200 OK"
    content_type: str
    body: bytes | AsyncGenerator[bytes, None]  # a generator is sent chunked, each piece as it comes
    headers: tuple[tuple[str, str], ...] = ()


class Refused(Exception):
    """A request refused (over the limits, or not allowed), and its answer; the connection is closed after it."""

    def __init__(self, status: str, body: bytes, content_type: str = TEXT):
        super().__init__(status)
        self.answer = Answer(status, content_type, body)


class HttpRequest:
    """One request: method, path, query, headers (looked up in any case), its peer's address, its body unread."""

    def __init__(self, raw: web.BaseRequest, deadline: asyncio.Timeout):
        self.method, self.path, self.query, self.headers = raw.method, raw.path, raw.query_string, raw.headers
        self.peer, self.via_proxy = raw.remote, False  # via_proxy: set by a server that trusts a proxy in front
        self._raw, self._deadline = raw, deadline
        self._read, self._reading_since = 0, asyncio.get_running_loop().time()

    def allow(self, seconds: float) -> None:
        """The exchange may go on until `seconds` from now (instead of REQUEST_DEADLINE from its start)."""
        self._deadline.reschedule(asyncio.get_running_loop().time() + seconds)

    def refuse_over(self, limit: int) -> None:
        """Refuses a body its Content-Length says is over `limit` bytes, before any of it is read."""
        if (self._raw.content_length or 0) > limit:
            raise Refused("413 Content Too Large", f"the body is over the limit of {limit} bytes\n".encode())

    async def pieces(self, limit: int) -> AsyncGenerator[bytes, None]:
        """The body as it arrives (Content-Length or chunked), refused (413) once over `limit` bytes."""
        self.refuse_over(limit)
        total = 0
        async for piece in self._raw.content.iter_chunked(CHUNK):
            total += len(piece)
            if total > limit:
                raise Refused("413 Content Too Large", f"the body is over the limit of {limit} bytes\n".encode())
            await self.paced(len(piece))
            yield piece

    async def paced(self, size: int) -> None:
        """Counts `size` bytes read from the body; waits while reading is ahead of READ_RATE."""
        self._read += size
        await asyncio.sleep(self._read / READ_RATE - (asyncio.get_running_loop().time() - self._reading_since))

    async def body(self, limit: int) -> bytes:
        """The body, in memory: refused once over `limit` bytes."""
        return b"".join([piece async for piece in self.pieces(limit)])

    async def multipart(self) -> MultipartReader:
        """A multipart/form-data body's parts, read as the route asks for them (the route bounds what it reads)."""
        return await self._raw.multipart()


class _ProtocolLog(logging.LoggerAdapter):
    """aiohttp's protocol log (a malformed request, a client gone): the client's doing, one line at DEBUG."""

    def exception(self, msg: Any, *args: Any, exc_info: Any = True, **kwargs: Any) -> None:
        self.debug(f"{msg}: %s", *args, exc_info if isinstance(exc_info, BaseException) else "", **kwargs)


class _Connections(web.Server):
    """aiohttp's low-level server, with the connection limits (see the module's docstring)."""

    def __init__(self, handler: Callable, limit: int, per_peer: int, **kwargs: Any):
        super().__init__(handler, **kwargs)
        self.busy: set[RequestHandler] = set()
        self._limit, self._per_peer = limit, per_peer

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)  # self._connections: oldest first
        peer = _peer(transport)
        open_ = [h for h in self._connections if h.transport is not None]  # not closed already, awaiting their end
        mine = [h for h in open_ if _peer(self._connections[h]) == peer]
        if len(mine) > self._per_peer:
            self._make_room(handler, mine)
        elif len(open_) > self._limit:
            self._make_room(handler, open_)

    def _make_room(self, newcomer: RequestHandler, among: list[RequestHandler]) -> None:
        idle = next((h for h in among if h is not newcomer and h not in self.busy), None)
        (idle or newcomer).force_close()


class HttpServer:
    """Answers requests on `listener` (bound and listening) with `_respond`, on an event loop in a thread of its own;
    `name` and `path` say what it serves in the log line at start."""

    max_connections = MAX_CONNECTIONS
    max_per_peer = MAX_PER_PEER
    nice = 0  # added to the thread's scheduling niceness: more yields the CPU to the engine's threads first

    def __init__(self, listener: socket.socket, name: str, path: str = "/"):
        self._listener, self._name, self._path = listener, name, path
        self._thread = threading.Thread(target=self._main, name=f"{name}-http")
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._connections: _Connections | None = None

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]  # the configured one, or the one the OS picked for port 0

    def start(self) -> None:
        self._thread.start()
        self._started.wait()
        if self._stopping is None:
            raise RuntimeError(f"the {self._name} server did not start")
        host = self._listener.getsockname()[0]
        _LOG.info("%s on http://%s:%s%s", self._name, f"[{host}]" if ":" in host else host, self.port, self._path)

    def stop(self) -> None:
        """Closes the listener and every connection (exchanges in progress get a moment to end), the thread ended."""
        if self._loop is not None and self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread.is_alive():
            self._thread.join()

    async def _respond(self, request: HttpRequest) -> Answer:
        raise NotImplementedError

    def _main(self) -> None:
        with contextlib.suppress(OSError):  # Linux schedules threads on their own
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + self.nice)
        asyncio.run(self._run())

    async def _run(self) -> None:
        try:
            self._connections = _Connections(
                self._handle, self.max_connections, self.max_per_peer, max_line_size=MAX_LINE,
                max_field_size=MAX_LINE, max_headers=128, keepalive_timeout=REQUEST_DEADLINE,
                lingering_time=0, access_log=None, logger=_ProtocolLog(_LOG, {}))
            runner = web.ServerRunner(self._connections, handle_signals=False, shutdown_timeout=STOP_SECONDS)
            await runner.setup()
            await web.SockSite(runner, self._listener).start()
            self._loop, self._stopping = asyncio.get_running_loop(), (stopping := asyncio.Event())
        finally:
            self._started.set()
        try:
            await stopping.wait()
        finally:
            await runner.cleanup()

    async def _handle(self, raw: web.BaseRequest) -> web.StreamResponse:
        assert self._connections is not None
        busy = self._connections.busy
        busy.add(raw.protocol)
        try:
            async with asyncio.timeout(REQUEST_DEADLINE) as deadline:
                response = await _send(raw, await self._answer(raw, deadline))
            async with asyncio.timeout(LINGER_SECONDS):
                left = LINGER_BYTES  # of a body the route did not read (refused): then aiohttp closes
                while left > 0 and not raw.content.is_eof() and (piece := await raw.content.readany()):
                    left -= len(piece)
            return response
        except (TimeoutError, ConnectionError):  # too slow, or gone: nothing left to say
            if raw.transport is not None:
                raw.transport.abort()
            raw.protocol.force_close()
            return web.Response()  # never sent: the connection is closed
        finally:
            busy.discard(raw.protocol)

    async def _answer(self, raw: web.BaseRequest, deadline: asyncio.Timeout) -> Answer:
        if sum(len(name) + len(value) + 4 for name, value in raw.raw_headers) > MAX_HEADERS:
            return Refused("431 Request Header Fields Too Large", b"headers too large\n").answer
        try:
            return await self._respond(HttpRequest(raw, deadline))
        except Refused as refusal:
            return refusal.answer
        except (TimeoutError, ConnectionError, asyncio.CancelledError):
            raise
        except Exception:  # a bug: the client gets a 500, not a connection that hangs until its deadline
            if raw.transport is None:  # ...unless the client left while its body was read (aiohttp: RuntimeError)
                raise ConnectionResetError(f"{raw.method} {raw.path}: the client left") from None
            _LOG.exception("%s %s failed", raw.method, raw.path)
            return Answer("500 Internal Server Error", TEXT, b"internal error; see the server's log\n")


class MetricsServer(HttpServer):
    """Serves `metrics` and the `alive()` probe (called in the server's thread) on `listener`, a socket bound and
    listening before the model loads (wyoming_chorus.wyoming.listeners)."""

    def __init__(self, metrics: Metrics, alive: Callable[[], bool], listener: socket.socket):
        super().__init__(listener, "metrics", "/metrics")
        self._metrics, self._alive = metrics, alive
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


async def _send(raw: web.BaseRequest, answer: Answer) -> web.StreamResponse:
    """The answer, sent within the exchange's deadline; a generator's pieces as they come (chunked)."""
    code, _, reason = answer.status.partition(" ")
    response = web.StreamResponse(status=int(code), reason=reason,
                                  headers={"Content-Type": answer.content_type, **dict(answer.headers)})
    response.force_close()  # every exchange closes its connection: nothing here gains from keep-alive
    if isinstance(answer.body, bytes):
        response.content_length = len(answer.body)
        await response.prepare(raw)
        await response.write(answer.body)
    else:
        response.enable_chunked_encoding()
        await response.prepare(raw)
        # Closed however the exchange ends (the client left, the deadline passed): a body that holds work, such as a
        # voice being spoken, stops it.
        async with contextlib.aclosing(answer.body) as pieces:
            async for piece in pieces:
                if piece:
                    await response.write(piece)
    await response.write_eof()
    return response


def _peer(transport: asyncio.BaseTransport) -> str | None:
    return peer[0] if isinstance(peer := transport.get_extra_info("peername"), tuple) else None
