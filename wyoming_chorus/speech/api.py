"""What the protocol side and the speech service say to each other: a `Request` goes in, a `Handle` comes out.

A Handle is made on the event loop and is read there: the PCM of one request, then its end or its error. The
threads that make the audio (the front end, the engine, the codec) reach it only through its producer methods,
each of which hands its item to the loop with `call_soon_threadsafe`; so nothing on the loop is ever touched from
another thread, and the items arrive in the order one producer sent them.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from wyoming_chorus.playback_clock import PlaybackClock

# How often a held first chunk reads its release again: about a step at batch 1, as often as the engine plans it.
RELEASE_RECHECK_SECONDS = 0.05


@dataclass(frozen=True)
class Request:
    """What to say and how. No asyncio object inside: a Request is a value (identical ones may share audio)."""
    text: str | None                 # the whole text; None: an open text, fed with Handle.feed and ended by close
    voice: str | None = None
    speaker: str | None = None
    language: str | None = None
    seed: int | None = None
    deferred: bool = False           # audio made ahead of need (a reply's next sentence) until Handle.needed()
    keep_codes: bool = False         # keep each frame's 16 codes in Handle.codes (synth --save-codes, tests)
    # The reply's playback as its listener hears it (every sentence of a reply shares one), read by the engine.
    # Not part of what a request is: identical requests of two replies still share one generation (see sharing.py).
    clock: PlaybackClock | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RequestInfo:
    """What the front end chose for a request: the reply log names it."""
    voice: str
    language: str | None             # a code ("de"); None: the model decides
    language_detected: bool          # told from the text, not named by the request or the voice
    unspoken: str | None = None      # the text's language when the voice does not speak it, described for the log


class Control(Protocol):
    """Where a Handle's own actions go (the front-end thread, or a shared generation). Called on the loop."""

    def feed(self, handle: Handle, text: str) -> None: ...
    def close(self, handle: Handle) -> None: ...
    def needed(self, handle: Handle) -> None: ...
    def cancel(self, handle: Handle) -> None: ...


class Handle:
    """One request's audio on its way to the loop. `first_audio`, when given, is told the seconds from the
    request's start in the engine (`started`) to its first PCM on the loop."""

    def __init__(self, request: Request, control: Control, first_audio: Callable[[float], None] | None = None):
        self.request = request
        self._loop = asyncio.get_running_loop()
        self.info: asyncio.Future[RequestInfo] = self._loop.create_future()
        self.info.add_done_callback(_mark_retrieved)  # the error is raised by the iteration; nobody must await info
        self._control = control
        self._first_audio = first_audio
        self._queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        self._codes: list[np.ndarray] = []
        self._started_at: float | None = None
        self._ended = False       # the end or an error is queued: anything sent later is dropped
        self._read_end = False    # the reader has met it
        self._needed = not request.deferred
        self._cancelled = False
        self._cancel_error: BaseException | None = None

    # ---- the reader's side (on the loop) -------------------------------------------------------------------------
    def feed(self, text: str) -> None:
        """The next piece of an open text (starting with the whitespace before it)."""
        self._control.feed(self, text)

    def close(self) -> None:
        """The open text is complete."""
        self._control.close(self)

    def needed(self) -> None:
        """A deferred request's audio is needed now (the listener reached it)."""
        if not self._needed:
            self._needed = True
            self._control.needed(self)

    def cancel(self, error: BaseException | None = None) -> None:
        """The request is aborted (behind whatever was sent for it before). The reader, if it reads on, gets the
        audio made so far, then `error` in place of the abort's own."""
        if not self._ended and not self._cancelled:
            self._cancelled = True
            self._cancel_error = error
            self._control.cancel(self)

    @property
    def done(self) -> bool:
        """Whether the request has ended (its end or error is queued for the reader)."""
        return self._ended

    @property
    def needed_now(self) -> bool:
        """Whether its listener waits for this audio now: False for a reply's next sentence made ahead of need, until
        needed() (the codec thread reads it)."""
        return self._needed

    @property
    def clock(self) -> PlaybackClock | None:
        """The reply's playback clock (the codec decodes the most urgent listener's audio first)."""
        return self.request.clock

    @property
    def codes(self) -> list[np.ndarray]:
        """Each frame's 16 codes so far, with Request.keep_codes."""
        return self._codes

    def __aiter__(self) -> Handle:
        return self

    async def __anext__(self) -> bytes:
        if self._read_end:
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, bytes):
            await self._release()
            return item
        self._read_end = True
        if item is None:
            raise StopAsyncIteration
        raise item

    async def _release(self) -> None:
        """The reply's first chunk waits out the hold the engine planned for it (engine/first_chunk_hold.py), read
        again every RELEASE_RECHECK_SECONDS: the engine plans it anew at each step while the chunk waits."""
        clock = self.request.clock
        while clock is not None and clock.written == 0 and (wait := clock.release_at() - time.monotonic()) > 0:
            await asyncio.sleep(min(wait, RELEASE_RECHECK_SECONDS))

    # ---- the producers' side (any thread) ------------------------------------------------------------------------
    def started(self, voice: str, language: str | None, language_detected: bool, unspoken: str | None = None) -> None:
        """The request is built and enters the engine now."""
        self._call(self._on_started, RequestInfo(voice, language, language_detected, unspoken), time.monotonic())

    def put(self, pcm: bytes) -> None:
        self._call(self._deliver, pcm)

    def add_codes(self, codes: np.ndarray) -> None:
        if self.request.keep_codes:
            self._call(self._codes.append, np.array(codes, dtype=np.int32))

    def finish(self) -> None:
        self._call(self._deliver, None)

    def fail(self, error: BaseException) -> None:
        self._call(self._deliver, error)

    def _call(self, callback: Callable[..., Any], *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the reader's event loop has closed: nobody is left to hear this request
            pass

    # ---- on the loop ---------------------------------------------------------------------------------------------
    def _on_started(self, info: RequestInfo, at: float) -> None:
        self._started_at = at
        if not self.info.done():
            self.info.set_result(info)

    def _deliver(self, item: bytes | BaseException | None) -> None:
        if self._ended:
            return
        if isinstance(item, bytes):
            if self._first_audio is not None and self._started_at is not None:
                self._first_audio(time.monotonic() - self._started_at)
                self._first_audio = None
        else:
            self._ended = True
            if item is not None and self._cancel_error is not None:
                item = self._cancel_error
            if item is not None and not self.info.done():
                self.info.set_exception(item)
        self._queue.put_nowait(item)


def _mark_retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()
