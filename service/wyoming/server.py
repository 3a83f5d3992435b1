"""The Wyoming protocol: one handler per connection, every connection served at once through the shared engine.

A connection has two tasks. The reading task (wyoming's `AsyncEventHandler.run`) handles each event at once and
never waits for audio, so Describe is answered within milliseconds even while the engine is saturated, and a client
that disconnects is noticed at once. The speaking task takes the connection's replies in order and writes their
audio as the engine produces it; cancelling it (on disconnect) closes the engine iterator, which aborts the request
and frees its KV blocks.

Replies (what the client receives):
- synthesize:      audio-start, audio-chunk..., audio-stop
- synthesize-start, synthesize-chunk..., synthesize-stop:
                   audio-start, audio-chunk..., audio-stop, synthesize-stopped
  Each sentence is synthesised as soon as it is complete (the next one generating while one is sent), and their
  audio, in order, shares one audio-start..audio-stop (Home Assistant takes the format from the first audio-start only).
  A synthesize event inside a stream is Home Assistant's copy for servers without streaming: ignored.
- A reply that fails (unknown voice, empty or too long text, busy server, malformed event) gets an `error` event as
  soon as the failure is known (a sentence already being spoken is finished first), then still ends as above:
  audio-start (if not sent yet), audio-stop and, for a stream, synthesize-stopped once the client sends
  synthesize-stop (or the stream times out, below). Home Assistant ignores `error` events and has no read timeout,
  so a reply that did not end would hang it. A stream that carries no text at all is not an error: its audio is
  empty.
- An event out of order gets an `error` event: synthesize-chunk outside a stream, a second synthesize-start
  (ignored; the open stream goes on), synthesize-stop outside a stream (followed by synthesize-stopped, which the
  client waits for). Unknown event types are ignored.
- Anything else that goes wrong while speaking closes the connection, which ends the client's wait too.

Limits (config.yaml's `server` section), so that no client can tie up the server:
- An event that cannot be read (service.wyoming.event_reader: a header of the wrong shape, sizes that are not small
  non-negative integers, more than server.max_event_bytes, invalid JSON) gets an `error` and the connection is
  closed: where the next event would start is unknown. So does an event not complete within server.event_timeout
  of its first byte, and a client that keeps sending requests after server.max_queued_replies of them were refused.
- server.max_connections, and server.max_connections_per_peer from one IP address (every local socket is one peer):
  a connection beyond them gets an `error` and is closed at once.
- server.stream_pause_timeout (between a stream's chunks) and server.stream_max_seconds (from its start to its
  stop): a stream past either gets an `error` ("stream-timeout") and its end (audio-stop, synthesize-stopped)
  without its synthesize-stop; its later chunks are refused like chunks outside a stream, its synthesize-stop is
  not answered (its synthesize-stopped has gone out), and the connection goes on (wyoming/stream_deadline.py).
- server.idle_timeout: a connection silent for that long while none of its replies is being spoken is closed; an
  open stream is ended first, as a timed-out one is.
- server.max_queued_replies: a request beyond them is refused with an `error` and still ended in order.
- server.max_buffered_audio_seconds: a client that falls that far behind in reading its audio and does not catch
  up within as many seconds gets an `error` and is cut off; its reply is aborted (the engine never waits for it).
Whatever a client sends or however it leaves, the log gets at most a DEBUG line, never a traceback.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.info import Describe
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped, SynthesizeVoice

from service.config import ServerSettings
from service.errors import InvalidText, MalformedEvent, QueueFull, ReplyError, RequestFailed, UnexpectedEvent
from service.metrics import Metrics
from service.wyoming.event_data import event_text, event_voice
from service.wyoming.event_reader import MAX_HEADER_BYTES, BadEvent, EventReader
from service.wyoming.info import build_info, program_version
from service.wyoming.playback import sentence_audio
from service.wyoming.reply import OneShotText, ReplyText, StreamedText
from service.wyoming.reply_log import ReplyLog
from service.wyoming.speech_engine import SpeechEngine
from service.wyoming.stream_deadline import StreamLimits, StreamTimeout

_LOG = logging.getLogger(__name__)

_SAMPLE_WIDTH = 2  # int16
_CHANNELS = 1
# How long a shutdown waits for the `error` and audio-stop of replies it aborts to reach their clients.
_END_REPLY_TIMEOUT = 2.0
# How long a closed connection may take to hand its last bytes to a client before it is dropped: a client that does
# not read would otherwise keep the socket, and the audio buffered for it, for ever.
_CLOSE_GRACE = 5.0
# How long the `error` that ends a connection may take to be written, and then the client's last input to be read.
_HANG_UP_TIMEOUT = 1.0


class EventTimeout(BadEvent):
    """An event begun and not finished within server.event_timeout."""

    code = "event-timeout"


class TooManyRequests(BadEvent):
    """Requests still coming after server.max_queued_replies of them were refused: the client is not listening."""

    code = "queue-full"


class ClientTooSlow(ConnectionError):
    """The client is more than server.max_buffered_audio_seconds behind in reading its audio."""


class _AudioOut:
    """One reply's audio: audio-start before the first chunk, chunks of at most `samples_per_chunk`, then its end.

    Each flag is set just before its event is written: wyoming buffers a whole event before it awaits the drain, so
    a shutdown that cancels the speaker mid-write never sends an event twice or leaves one out."""

    def __init__(self, handler: ChorusHandler, rate: int, samples_per_chunk: int):
        self._handler = handler
        self._rate = rate
        self._chunk_bytes = samples_per_chunk * _SAMPLE_WIDTH * _CHANNELS
        self._started = False
        self._stopped = False
        self._stream_stopped = False

    async def write(self, pcm: bytes) -> None:
        await self._start()
        for offset in range(0, len(pcm), self._chunk_bytes):
            chunk = AudioChunk(self._rate, _SAMPLE_WIDTH, _CHANNELS, pcm[offset:offset + self._chunk_bytes])
            await self._handler.write_event(chunk.event())

    async def end(self, streaming: bool) -> None:
        """audio-stop, then synthesize-stopped for a stream."""
        await self._start()
        if not self._stopped:
            self._stopped = True
            await self._handler.write_event(AudioStop().event())
        if streaming and not self._stream_stopped:
            self._stream_stopped = True
            await self._handler.write_event(SynthesizeStopped().event())

    async def _start(self) -> None:
        if not self._started:
            self._started = True
            await self._handler.write_event(AudioStart(self._rate, _SAMPLE_WIDTH, _CHANNELS).event())


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
        self._refused_hosts: set[str] = set()  # hosts at max_connections_per_peer, said once each in the log

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
        per_peer = self.limits.max_connections_per_peer
        if sum(handler.host == host for handler in self._handlers) >= per_peer:
            if host not in self._refused_hosts:
                _LOG.warning("%s has %d connections open (server.max_connections_per_peer): refusing its new ones",
                             host, per_peer)
            self._refused_hosts.add(host)
            await _refuse(reader, writer, f"{host} has {per_peer} connections open already, the most one host may")
            return
        self._refused_hosts.discard(host)
        if self.connections >= self.limits.max_connections:
            if not self._refusing:
                _LOG.warning("%d connections are open (server.max_connections): refusing new ones",
                             self.connections)
            self._refusing = True
            await _refuse(reader, writer, f"the server has {self.limits.max_connections} connections open already")
            return
        if self._refusing:
            _LOG.info("accepting new connections again")
            self._refusing = False
        handler = ChorusHandler(reader, writer, self)
        self._handlers.add(handler)
        await handler.run()

    def forget(self, handler: ChorusHandler) -> None:
        self._handlers.discard(handler)

    @property
    def connections(self) -> int:
        """Connections being served (refused ones are never counted)."""
        return len(self._handlers)


class ChorusHandler(AsyncEventHandler):
    """One client connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: ChorusServer):
        super().__init__(reader, writer)
        self._server = server
        self._stream: StreamedText | None = None  # the open stream, between synthesize-start and synthesize-stop
        self._replies: asyncio.Queue[ReplyText] = asyncio.Queue()
        self._speaker: asyncio.Task | None = None
        self._closed = asyncio.Event()
        self._speaking: tuple[ReplyText, _AudioOut] | None = None  # the reply being spoken and its audio so far
        self._ending: ReplyError | None = None  # set when a shutdown ends every reply of this connection
        peer = writer.get_extra_info("peername")
        self.host = _host(writer)
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else self.host
        limits = server.limits
        self._events = EventReader(reader, limits.max_event_bytes)
        self._quiet_since = time.monotonic()  # the last event, or the end of the last reply
        # drain() waits once this much audio is buffered (asyncio's 64 KiB would be 0.7 s): see write_event.
        bytes_per_second = server.engine.sample_rate * _SAMPLE_WIDTH * _CHANNELS
        writer.transport.set_write_buffer_limits(high=round(limits.max_buffered_audio_seconds * bytes_per_second))

    # ---- reading task ----------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Reads and handles events until the client leaves, stays idle, or sends one that cannot be read. wyoming's
        own loop trusts the header and lets errors escape; this one lets none escape."""
        self._is_running = True
        bad: BadEvent | None = None
        try:
            while self._is_running and (event := await self._next_event()) is not None:
                self._quiet_since = time.monotonic()
                if not await self.handle_event(event):
                    break
        except BadEvent as error:
            _LOG.debug("%s sent an event that cannot be read (%s): %s; closing the connection",
                       self._peer, error.code, error)
            bad = error
        except (OSError, asyncio.IncompleteReadError) as error:  # a reset, a broken pipe, an end mid-event
            _LOG.debug("%s left in the middle of an event (%s)", self._peer, type(error).__name__)
        finally:
            await self.disconnect()  # the speaker first: nothing may be written after the error
            if bad is not None:
                await _hang_up(self.reader, self.writer, str(bad), bad.code)
            _close(self.writer)

    async def _next_event(self) -> Event | None:
        """The next event; None once the client has closed the connection or stayed silent for idle_timeout while
        none of its replies was being spoken. Raises EventTimeout for an event begun and not finished in time."""
        limits = self._server.limits
        while True:
            busy = self._busy()
            wait = limits.idle_timeout if busy else self._quiet_since + limits.idle_timeout - time.monotonic()
            timer = asyncio.timeout(max(wait, 0.0))
            try:
                async with timer:
                    began = await self._events.wait()
                break
            except TimeoutError:
                if not timer.expired():  # the socket's own (an OSError)
                    raise
                if not busy:  # nothing but an event makes it busy again: it has been idle all along
                    _LOG.debug("%s idle for %g s; closing the connection", self._peer, limits.idle_timeout)
                    if (stream := self._open_stream) is not None:  # ended first, as one past its own limits is
                        stream.time_out(StreamTimeout(f"no text for {limits.idle_timeout:g} s (server.idle_timeout)"))
                        await self.wait_idle()
                    return None
        if not began:
            return None
        timer = asyncio.timeout(limits.event_timeout)
        try:
            async with timer:
                return await self._events.read()
        except TimeoutError:
            if not timer.expired():
                raise
            raise EventTimeout(f"the event was not complete {limits.event_timeout:g} s after it began") from None

    def _unspoken(self) -> int:
        """Replies received and not yet spoken to the end, the one being spoken included."""
        return self._replies.qsize() + (self._speaking is not None)

    def _busy(self) -> bool:
        """Whether a reply that has all its text is still being spoken: a silent client is then waiting for audio,
        not idle. An open stream waits for the client's text, so it does not count."""
        return self._unspoken() > (self._open_stream is not None)

    @property
    def _open_stream(self) -> StreamedText | None:
        """The stream between synthesize-start and synthesize-stop, unless it timed out: the server has ended it
        then, and the client's later chunks are refused as if no stream were open (its synthesize-stop, which
        forgets it, is not answered: its synthesize-stopped went out with its end)."""
        return None if self._stream is None or self._stream.timed_out else self._stream

    async def write_event(self, event: Event) -> None:
        """Writes, then waits while max_buffered_audio_seconds of audio are unread, as long as that many seconds;
        then the client is cut off. It is the time that counts, not only the size: the audio of a sentence made
        ahead arrives all at once, more than a client that reads at full speed can take in at once."""
        seconds = self._server.limits.max_buffered_audio_seconds
        timer = asyncio.timeout(seconds)
        try:
            async with timer:
                await super().write_event(event)
        except TimeoutError:
            if not timer.expired():
                raise
            _LOG.info("%s has not read its last %g s of audio in %g s (server.max_buffered_audio_seconds): "
                      "cutting it off", self._peer, seconds, seconds)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0):  # into the buffer, behind the audio: no waiting for it to drain
                    await super().write_event(Error(text=f"{seconds:g} s of audio unread", code="client-too-slow")
                                              .event())
            raise ClientTooSlow(f"{seconds:g} s of audio unread for {seconds:g} s") from None

    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                # Built per Describe: voices added to the config file since the start are listed at once.
                info = build_info(self._server.engine.voices, self._server.version)
                await self.write_event(info.event())
            elif Synthesize.is_type(event.type):
                self._on_synthesize(event)
            elif SynthesizeStart.is_type(event.type):
                await self._on_stream_start(event)
            elif SynthesizeChunk.is_type(event.type):
                await self._on_stream_chunk(event)
            elif SynthesizeStop.is_type(event.type):
                await self._on_stream_stop()
            else:
                _LOG.debug("ignoring event %r", event.type)
        except ConnectionError:  # the client left before our answer
            return False
        return True

    def _on_synthesize(self, event: Event) -> None:
        if self._open_stream is not None:
            return  # Home Assistant's copy of the whole text for servers that cannot stream
        voice, refusal = self._admit(event)
        reply = OneShotText(voice, self._server.max_text_length)
        self._enqueue(reply, refusal)
        try:
            text = event_text(event.data)
        except MalformedEvent as error:
            reply.fail(error)
        else:
            if not text.strip():
                reply.fail(InvalidText("the text is empty"))
            reply.add(text)
        reply.finish()

    async def _on_stream_start(self, event: Event) -> None:
        if self._open_stream is not None:
            await self._error(UnexpectedEvent("synthesize-start while a stream is open; it is ignored"))
            return
        voice, refusal = self._admit(event)
        limits = self._server.limits
        self._stream = StreamedText(voice, self._server.max_text_length, stream_input=limits.streaming_input,
                                    limits=StreamLimits(limits.stream_pause_timeout, limits.stream_max_seconds))
        self._enqueue(self._stream, refusal)

    async def _on_stream_chunk(self, event: Event) -> None:
        if (stream := self._open_stream) is None:
            why = "after its stream timed out" if self._stream is not None else "without synthesize-start"
            await self._error(UnexpectedEvent(f"synthesize-chunk {why}"))
            return
        try:
            stream.add(event_text(event.data))
        except MalformedEvent as error:
            stream.fail(error)

    async def _on_stream_stop(self) -> None:
        if self._stream is None:
            await self._error(UnexpectedEvent("synthesize-stop without synthesize-start"))
            await self.write_event(SynthesizeStopped().event())
            return
        self._stream.finish()
        self._stream = None

    def _admit(self, event: Event) -> tuple[SynthesizeVoice | None, ReplyError | None]:
        """The voice a new reply asks for, or why it is refused (it is still queued, and ended in its turn)."""
        limit = self._server.limits.max_queued_replies
        if self._unspoken() >= 2 * limit:  # it ignores its refusals: only the connection's end stops it
            raise TooManyRequests(f"{limit} replies are waiting and {limit} more were refused")
        if self._unspoken() >= limit:
            return None, QueueFull(f"{limit} replies are waiting on this connection already")
        try:
            return event_voice(event.data), None
        except MalformedEvent as malformed:
            return None, malformed

    def _enqueue(self, reply: ReplyText, refusal: ReplyError | None) -> None:
        if refusal is not None:
            reply.fail(refusal)
        self._replies.put_nowait(reply)
        if self._speaker is None:
            self._speaker = asyncio.create_task(self._speak_all(), name="chorus speaker")

    async def _error(self, error: ReplyError) -> None:
        _LOG.info("error reply: %s (%s)", error, error.code)
        await self.write_event(Error(text=str(error), code=error.code).event())

    async def disconnect(self) -> None:
        self._server.forget(self)
        if self._stream is not None:
            self._stream.abandon()
        if self._speaker is not None:
            self._speaker.cancel()  # closes the engine iterator: the request is aborted, its blocks freed
            await asyncio.wait([self._speaker])
        while not self._replies.empty():  # received but never reached: counted, so the sum is what clients sent
            self._replies.get_nowait()
            self._replies.task_done()
            self._server.metrics.requests_total.labels(status="aborted").inc()
        self._closed.set()

    async def wait_idle(self) -> None:
        """Until every reply received so far has been spoken (or the connection has closed)."""
        join = asyncio.ensure_future(self._replies.join())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait([join, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            join.cancel()
            closed.cancel()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    # ---- speaking task ---------------------------------------------------------------------------------------
    async def _speak_all(self) -> None:
        try:
            while True:
                reply = await self._replies.get()
                try:
                    await self._speak(reply)
                finally:
                    self._replies.task_done()
                    self._quiet_since = time.monotonic()
        except asyncio.CancelledError:
            if self._ending is None:  # the client left: nobody to tell
                raise
            await self._end_all(self._ending)
        except ConnectionError:
            _LOG.debug("client went away mid-reply")
        except Exception:  # a bug: the client sees the connection close rather than waiting forever
            _LOG.exception("reply failed; closing the connection")
        await self.stop()

    async def end_replies(self, error: ReplyError) -> None:
        """Shutdown: abort the reply being spoken (its engine requests are closed) and every queued one, and end
        each with `error`, audio-stop and, for a stream, synthesize-stopped."""
        self._ending = error
        if self._speaker is not None and not self._speaker.done():
            self._speaker.cancel()
            await asyncio.wait([self._speaker])

    async def _end_all(self, error: ReplyError) -> None:
        with contextlib.suppress(ConnectionError):
            if self._speaking is not None:
                reply, audio = self._speaking
                await self._end(reply, audio, error)
            while not self._replies.empty():
                reply = self._replies.get_nowait()
                self._server.metrics.requests_total.labels(status="aborted").inc()  # never reached _speak
                await self._end(reply, _AudioOut(self, self._server.engine.sample_rate,
                                                 self._server.samples_per_chunk), error)
                self._replies.task_done()

    async def _end(self, reply: ReplyText, audio: _AudioOut, error: ReplyError) -> None:
        await self._error(error)
        await audio.end(reply.streaming)

    async def _speak(self, reply: ReplyText) -> None:
        engine = self._server.engine
        audio = _AudioOut(self, engine.sample_rate, self._server.samples_per_chunk)
        self._speaking = (reply, audio)
        log = ReplyLog(self._peer, engine.sample_rate, _SAMPLE_WIDTH * _CHANNELS)
        voice = reply.voice or SynthesizeVoice()
        status, counted = "aborted: the client left", "aborted"  # unless it gets further than a cancellation
        try:
            try:
                sentences = sentence_audio(engine, reply.sentences(), voice, on_info=log.spoke)
                async with contextlib.aclosing(sentences) as pcm_chunks:
                    async for pcm in pcm_chunks:
                        log.audio(pcm)
                        await audio.write(pcm)
                status = counted = "ok"
            except ReplyError as error:
                status = f"error {error.code}: {error}"
                counted = "rejected" if isinstance(error, QueueFull) else "error"
                await self._error(error)
                await reply.wait_complete()
        except asyncio.CancelledError:
            if self._ending is not None:
                status = f"aborted: {self._ending}"
            raise
        finally:
            # Before the reply's last event: whoever has the whole reply finds it counted and its line in the log.
            self._server.metrics.requests_total.labels(status=counted).inc()
            log.done(status, reply.characters, reply.text_since)
        await audio.end(reply.streaming)
        self._speaking = None


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
