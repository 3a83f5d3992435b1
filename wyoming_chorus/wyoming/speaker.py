"""The speaking task of one connection: its replies taken in the order they came, each spoken to its end (audio as
the engine produces it, then audio-stop and, for a stream, synthesize-stopped) before the next. Cancelling it (on
disconnect) closes the engine iterator, which aborts the request and frees its KV blocks."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from wyoming.tts import SynthesizeVoice

from wyoming_chorus.errors import QueueFull, ReplyError
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.playback_clock import PlaybackClock
from wyoming_chorus.speech.api import Request
from wyoming_chorus.speech.sentence_audio import sentence_audio
from wyoming_chorus.speech.speech_engine import SpeechEngine
from wyoming_chorus.wyoming.audio_out import CHANNELS, SAMPLE_WIDTH, AudioOut
from wyoming_chorus.wyoming.event_writer import EventWriter
from wyoming_chorus.wyoming.reply import ReplyText
from wyoming_chorus.wyoming.reply_log import ReplyLog

_LOG = logging.getLogger(__name__)


class Speaker:
    """Speaks the replies `put` to it through `engine` to `out`; `peer` names the client in the log, `done` closes
    the connection once no reply can be spoken any more (the client left, a bug, or a shutdown ended them)."""

    def __init__(self, engine: SpeechEngine, metrics: Metrics, samples_per_chunk: int, out: EventWriter, peer: str,
                 done: Callable[[], Awaitable[None]]):
        self._engine = engine
        self._metrics = metrics
        self._samples_per_chunk = samples_per_chunk
        self._out = out
        self._peer = peer
        self._done = done
        self._replies: asyncio.Queue[ReplyText] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self._speaking: tuple[ReplyText, AudioOut] | None = None  # the reply being spoken and its audio so far
        self._ending: ReplyError | None = None  # set when a shutdown ends every reply of this connection
        self.spoke_at = float("-inf")  # when the last reply was spoken to its end

    def put(self, reply: ReplyText) -> None:
        self._replies.put_nowait(reply)
        if self._task is None:
            self._task = asyncio.create_task(self._speak_all(), name="chorus speaker")

    @property
    def unspoken(self) -> int:
        """Replies received and not yet spoken to the end, the one being spoken included."""
        return self._replies.qsize() + (self._speaking is not None)

    async def wait_spoken(self) -> None:
        """Until every reply put so far has been spoken (or ended)."""
        await self._replies.join()

    async def abort(self) -> None:
        """The client left: the reply being spoken is aborted, and the queued ones are counted as never reached."""
        if self._task is not None:
            self._task.cancel()  # closes the engine iterator: the request is aborted, its blocks freed
            await asyncio.wait([self._task])
        while not self._replies.empty():  # received but never reached: counted, so the sum is what clients sent
            self._replies.get_nowait()
            self._replies.task_done()
            self._metrics.requests_total.labels(status="aborted").inc()

    async def end_replies(self, error: ReplyError) -> None:
        """Shutdown: abort the reply being spoken (its engine requests are closed) and every queued one, and end
        each with `error`, audio-stop and, for a stream, synthesize-stopped."""
        self._ending = error
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait([self._task])

    async def _speak_all(self) -> None:
        try:
            while True:
                reply = await self._replies.get()
                try:
                    await self._speak(reply)
                finally:
                    self._replies.task_done()
                    self.spoke_at = time.monotonic()
        except asyncio.CancelledError:
            if self._ending is None:  # the client left: nobody to tell
                raise
            await self._end_all(self._ending)
        except ConnectionError:
            _LOG.debug("client went away mid-reply")
        except Exception:  # a bug: the client sees the connection close rather than waiting forever
            _LOG.exception("reply failed; closing the connection")
        await self._done()

    async def _end_all(self, error: ReplyError) -> None:
        with contextlib.suppress(ConnectionError):
            if self._speaking is not None:
                reply, audio = self._speaking
                await self._end(reply, audio, error)
            while not self._replies.empty():
                reply = self._replies.get_nowait()
                self._metrics.requests_total.labels(status="aborted").inc()  # never reached _speak
                await self._end(reply, self._audio_out(), error)
                self._replies.task_done()

    async def _end(self, reply: ReplyText, audio: AudioOut, error: ReplyError) -> None:
        await self._out.error(error)
        await audio.end(reply.streaming)

    def _audio_out(self) -> AudioOut:
        return AudioOut(self._out, self._engine.sample_rate, self._samples_per_chunk)

    async def _speak(self, reply: ReplyText) -> None:
        engine = self._engine
        audio = self._audio_out()
        self._speaking = (reply, audio)
        log = ReplyLog(self._peer, engine.sample_rate, SAMPLE_WIDTH * CHANNELS)
        listener = _Listener(self._metrics, engine.sample_rate * SAMPLE_WIDTH * CHANNELS, lambda: reply.characters)
        voice = reply.voice or SynthesizeVoice()
        status, counted = "aborted: the client left", "aborted"  # unless it gets further than a cancellation
        try:
            try:
                spoken = Request(None, voice=voice.name, speaker=voice.speaker, language=voice.language,
                                 clock=listener.clock)
                sentences = sentence_audio(engine, reply.sentences(), spoken, on_info=log.spoke)
                async with contextlib.aclosing(sentences) as pcm_chunks:
                    async for pcm in pcm_chunks:
                        log.audio(pcm)
                        await audio.write(pcm)
                        listener.heard(pcm, reply.text_since or log.started)
                status = counted = "ok"
            except ReplyError as error:
                status = f"error {error.code}: {error}"
                counted = "rejected" if isinstance(error, QueueFull) else "error"
                await self._out.error(error)
                await reply.wait_complete()
        except asyncio.CancelledError:
            if self._ending is not None:
                status = f"aborted: {self._ending}"
            raise
        finally:
            # Before the reply's last event: whoever has the whole reply finds it counted and its line in the log.
            self._metrics.requests_total.labels(status=counted).inc()
            if counted == "ok":
                listener.ended()
            log.done(status, reply.characters, reply.text_since)
        await audio.end(reply.streaming)
        self._speaking = None


class _Listener:
    """One reply's playback clock as its listener hears it, and the playback metrics it feeds."""

    def __init__(self, metrics: Metrics, bytes_per_second: int, text_length: Callable[[], int]):
        self.clock = PlaybackClock(text_length=text_length)
        self._metrics = metrics
        self._bytes_per_second = bytes_per_second
        self._gaps = False  # it has underrun

    def heard(self, pcm: bytes, since: float) -> None:
        """`pcm` was just written; `since`: when the reply's text began."""
        now = time.monotonic()
        first = self.clock.written == 0
        dry = self.clock.wrote(len(pcm) / self._bytes_per_second, now)
        if dry > 0:
            self._gaps = True
            self._metrics.playback_underruns.inc()
            self._metrics.playback_underrun_seconds.inc(dry)
        if first:  # Home Assistant 2026.11 plays it at once: the reply's first sound
            self._metrics.reply_first_chunk.observe(now - since)
            if self.clock.first_ready is not None:
                self._metrics.first_chunk_hold.observe(max(0.0, now - self.clock.first_ready))

    def ended(self) -> None:
        """The reply was spoken to its end."""
        if self.clock.written > 0 and not self._gaps:
            self._metrics.replies_gap_free.inc()
