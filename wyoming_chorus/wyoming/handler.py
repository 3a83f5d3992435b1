"""One Wyoming connection (the protocol: wyoming_chorus/wyoming/__init__.py).

A connection has two tasks. The reading task (`run`) handles each event at once (`handle_event`) and never waits
for audio, so Describe is answered within milliseconds even while the engine is saturated, and a client that
disconnects is noticed at once. The speaking task (wyoming/speaker.py) takes the connection's replies in order and
writes their audio as the engine produces it.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped, SynthesizeVoice

from wyoming_chorus.errors import InvalidText, MalformedEvent, QueueFull, ReplyError, UnexpectedEvent
from wyoming_chorus.wyoming.audio_out import CHANNELS, SAMPLE_WIDTH
from wyoming_chorus.wyoming.event_data import event_text, event_voice
from wyoming_chorus.wyoming.event_reader import BadEvent, EventReader
from wyoming_chorus.wyoming.event_writer import EventWriter
from wyoming_chorus.wyoming.info import build_info
from wyoming_chorus.wyoming.reply import OneShotText, ReplyText, StreamedText
from wyoming_chorus.wyoming.speaker import Speaker
from wyoming_chorus.wyoming.stream_deadline import StreamLimits, StreamTimeout

if TYPE_CHECKING:
    from wyoming_chorus.wyoming.connections import ChorusServer

_LOG = logging.getLogger(__name__)


class EventTimeout(BadEvent):
    """An event begun and not finished within server.event_timeout."""

    code = "event-timeout"


class TooManyRequests(BadEvent):
    """Requests still coming after server.max_queued_replies of them were refused: the client is not listening."""

    code = "queue-full"


class ChorusHandler:
    """One client connection; `host` is who it is from, as server.max_connections_per_peer counts them."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: ChorusServer, host: str):
        self._reader = reader
        self._writer = writer
        self._server = server
        self.host = host
        peer = writer.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else host
        limits = server.limits
        self._events = EventReader(reader, limits.max_event_bytes)
        self._out = EventWriter(writer, limits.max_buffered_audio_seconds,
                                server.engine.sample_rate * SAMPLE_WIDTH * CHANNELS, self._peer)
        self._running = False
        self._stream: StreamedText | None = None  # the open stream, between synthesize-start and synthesize-stop
        self._speaker = Speaker(server.engine, server.metrics, server.samples_per_chunk, self._out, self._peer,
                                self.stop)
        self._closed = asyncio.Event()
        self._last_event = time.monotonic()

    async def run(self) -> BadEvent | None:
        """Reads and handles events until the client leaves, stays idle, or sends one that cannot be read (returned:
        the connection is hung up with its `error`). wyoming's own loop trusts the header and lets errors escape;
        this one lets none escape."""
        self._running = True
        try:
            while self._running and (event := await self._next_event()) is not None:
                self._last_event = time.monotonic()
                if not await self.handle_event(event):
                    break
        except BadEvent as error:
            _LOG.debug("%s sent an event that cannot be read (%s): %s; closing the connection",
                       self._peer, error.code, error)
            return error
        except (OSError, asyncio.IncompleteReadError) as error:  # a reset, a broken pipe, an end mid-event
            _LOG.debug("%s left in the middle of an event (%s)", self._peer, type(error).__name__)
        finally:
            await self._disconnect()  # the speaker first: nothing may be written after the error
        return None

    async def _next_event(self) -> Event | None:
        """The next event; None once the client has closed the connection or stayed silent for idle_timeout while
        none of its replies was being spoken. Raises EventTimeout for an event begun and not finished in time."""
        limits = self._server.limits
        while True:
            busy = self._busy()
            quiet_since = max(self._last_event, self._speaker.spoke_at)  # the last event or the end of a reply
            wait = limits.idle_timeout if busy else quiet_since + limits.idle_timeout - time.monotonic()
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

    @property
    def idle_since(self) -> float | None:
        """When the connection last did something (its last event or the end of its last reply), if it does nothing
        now: no reply waiting, being spoken or streamed, no event begun; None while it is busy."""
        if not self._running or self._speaker.unspoken or self._events.began:
            return None
        return max(self._last_event, self._speaker.spoke_at)

    def _busy(self) -> bool:
        """Whether a reply that has all its text is still being spoken: a silent client is then waiting for audio,
        not idle. An open stream waits for the client's text, so it does not count."""
        return self._speaker.unspoken > (self._open_stream is not None)

    @property
    def _open_stream(self) -> StreamedText | None:
        """The stream between synthesize-start and synthesize-stop, unless it timed out: the server has ended it
        then, and the client's later chunks are refused as if no stream were open (its synthesize-stop, which
        forgets it, is not answered: its synthesize-stopped went out with its end)."""
        return None if self._stream is None or self._stream.timed_out else self._stream

    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                # Built per Describe: voices added to the config file since the start are listed at once.
                await self._out.write(build_info(self._server.engine.voices, self._server.version).event())
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
            await self._out.error(UnexpectedEvent("synthesize-start while a stream is open; it is ignored"))
            return
        voice, refusal = self._admit(event)
        limits = self._server.limits
        self._stream = StreamedText(voice, self._server.max_text_length, stream_input=limits.streaming_input,
                                    limits=StreamLimits(limits.stream_pause_timeout, limits.stream_max_seconds))
        self._enqueue(self._stream, refusal)

    async def _on_stream_chunk(self, event: Event) -> None:
        if (stream := self._open_stream) is None:
            why = "after its stream timed out" if self._stream is not None else "without synthesize-start"
            await self._out.error(UnexpectedEvent(f"synthesize-chunk {why}"))
            return
        try:
            stream.add(event_text(event.data))
        except MalformedEvent as error:
            stream.fail(error)

    async def _on_stream_stop(self) -> None:
        if self._stream is None:
            await self._out.error(UnexpectedEvent("synthesize-stop without synthesize-start"))
            await self._out.write(SynthesizeStopped().event())
            return
        self._stream.finish()
        self._stream = None

    def _admit(self, event: Event) -> tuple[SynthesizeVoice | None, ReplyError | None]:
        """The voice a new reply asks for, or why it is refused (it is still queued, and ended in its turn)."""
        limit = self._server.limits.max_queued_replies
        if self._speaker.unspoken >= 2 * limit:  # it ignores its refusals: only the connection's end stops it
            raise TooManyRequests(f"{limit} replies are waiting and {limit} more were refused")
        if self._speaker.unspoken >= limit:
            return None, QueueFull(f"{limit} replies are waiting on this connection already")
        try:
            return event_voice(event.data), None
        except MalformedEvent as malformed:
            return None, malformed

    def _enqueue(self, reply: ReplyText, refusal: ReplyError | None) -> None:
        if refusal is not None:
            reply.fail(refusal)
        self._speaker.put(reply)

    async def _disconnect(self) -> None:
        self._server.forget(self)
        if self._stream is not None:
            self._stream.abandon()
        await self._speaker.abort()
        self._closed.set()

    async def stop(self) -> None:
        """Reads no further event and closes the connection (the reading task then ends)."""
        self._running = False
        self._writer.close()
        self._reader.feed_eof()

    async def wait_idle(self) -> None:
        """Until every reply received so far has been spoken (or the connection has closed)."""
        join = asyncio.ensure_future(self._speaker.wait_spoken())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait([join, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            join.cancel()
            closed.cancel()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def end_replies(self, error: ReplyError) -> None:
        """Shutdown: every reply of this connection is ended with `error` (wyoming/speaker.py)."""
        await self._speaker.end_replies(error)
