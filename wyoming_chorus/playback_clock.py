"""One reply's playback as its listener hears it, shared by the side that writes the audio and the engine.

A client plays a reply at 1x from its first chunk. So at any moment the listener has `slack` seconds of audio left
to play: the audio written so far minus the time since the first chunk was written. When a chunk is written after
the listener ran dry (slack below zero), the reply has *underrun*: the listener heard silence for that long and
resumes playing from the new chunk, so the clock's origin moves on by the silence.

A reply that cannot be made as fast as it is spoken may be held before its first chunk (engine/first_chunk_hold.py):
the engine plans the hold (`plan_hold`), the writer asks when its first chunk may go out (`release_at`).

Written on the event loop (`wrote`, `release_at`), read by the engine thread (`snapshot`, `slack`, `first_ready`)
without a lock: each state is one value or tuple replaced as a whole, so a reader always sees what a writer published.
"""
from __future__ import annotations

import time
from collections.abc import Callable


class PlaybackClock:
    __slots__ = ("_state", "_hold", "began", "first_ready", "underruns", "underrun_seconds", "text_length")

    def __init__(self, now: float | None = None, text_length: Callable[[], int] | None = None) -> None:
        """`text_length`: the reply's characters so far (the writer's; read by the engine for the reply's expected
        length)."""
        self._state: tuple[float | None, float] = (None, 0.0)  # (when playback started, seconds written)
        self.underruns = 0  # times the listener ran dry so far
        self.underrun_seconds = 0.0  # and the silence it heard in all
        self.text_length = text_length
        # When the reply began: a satellite's patience for the first sound counts from about here.
        self.began = time.monotonic() if now is None else now
        self._hold: tuple[float, float] = (0.0, self.began)  # (seconds the first chunk waits, its latest release)
        self.first_ready: float | None = None  # when the first chunk reached the writer

    def plan_hold(self, seconds: float, latest: float) -> None:
        """The engine's plan: the first chunk waits `seconds` once it is at the writer, if it can still go out by
        `latest` (a monotonic time); else it goes out at once."""
        self._hold = (seconds, latest)

    def release_at(self, now: float | None = None) -> float:
        """When the first chunk, at the writer now (or since its first call), may go out: after the planned hold if
        that ends by its latest release, else at once (a shorter wait would only move silence, not end it)."""
        if self.first_ready is None:
            self.first_ready = time.monotonic() if now is None else now
        seconds, latest = self._hold
        release = self.first_ready + seconds
        return release if release <= latest else self.first_ready

    def wrote(self, seconds: float, now: float | None = None) -> float:
        """`seconds` of audio were just written. Returns how long the listener had run dry before it (0.0 if not)."""
        now = time.monotonic() if now is None else now
        origin, written = self._state
        if origin is None:
            self._state = (now, seconds)
            return 0.0
        dry = (now - origin) - written
        if dry > 0:
            origin += dry  # it plays on from this chunk: the silence shifts the rest of the reply
            self.underruns += 1
            self.underrun_seconds += dry
        self._state = (origin, written + seconds)
        return max(dry, 0.0)

    def expected_seconds(self, seconds_per_character: float) -> float | None:
        """The reply's expected audio from its text so far; None when the writer did not say its text's length."""
        return None if self.text_length is None else self.text_length() * seconds_per_character

    def snapshot(self) -> tuple[float | None, float]:
        """(when playback started or None before the first chunk, seconds written)."""
        return self._state

    @property
    def written(self) -> float:
        return self._state[1]

    def slack(self, now: float | None = None) -> float | None:
        """Seconds of audio the listener has left to play; None before the first chunk."""
        origin, written = self._state
        if origin is None:
            return None
        return written - ((time.monotonic() if now is None else now) - origin)
