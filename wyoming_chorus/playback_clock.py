"""One reply's playback as its listener hears it, shared by the side that writes the audio and the engine.

A client plays a reply at 1x from its first chunk. So at any moment the listener has `slack` seconds of audio left
to play: the audio written so far minus the time since the first chunk was written. When a chunk is written after
the listener ran dry (slack below zero), the reply has *underrun*: the listener heard silence for that long and
resumes playing from the new chunk, so the clock's origin moves on by the silence.

Written on the event loop (`wrote`), read by the engine thread (`snapshot`, `slack`) without a lock: the state is
one tuple replaced as a whole, so a reader always sees a pair the writer published.
"""
from __future__ import annotations

import time


class PlaybackClock:
    __slots__ = ("_state",)

    def __init__(self) -> None:
        self._state: tuple[float | None, float] = (None, 0.0)  # (when playback started, seconds written)

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
        self._state = (origin, written + seconds)
        return max(dry, 0.0)

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
