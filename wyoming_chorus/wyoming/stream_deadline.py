"""How long a streamed reply may wait for its text (config.yaml's server.stream_pause_timeout and
server.stream_max_seconds).

A stream's request waits for the client's text, holding its connection and, while it speaks, its place in the batch.
A client that opens a stream and then falls silent, or sends one word now and then, would hold both for as long as
it likes; an LLM pauses for seconds while it calls a tool, not minutes. Past either limit the stream fails with a
StreamTimeout and is ended by the server: its audio so far is finished (audio-stop, synthesize-stopped) without
waiting for the client's synthesize-stop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from wyoming_chorus.errors import ReplyError


class StreamTimeout(ReplyError):
    """A stream that waited too long for its next text, or was open too long; the text says which limit."""

    code = "stream-timeout"


@dataclass(frozen=True)
class StreamLimits:
    pause: float     # server.stream_pause_timeout: most seconds between two chunks (or the start and a chunk)
    lifetime: float  # server.stream_max_seconds: most seconds from synthesize-start to synthesize-stop


class StreamDeadline:
    """Calls `expire` with a StreamTimeout once the stream has waited `limits.pause` s since it began or last had
    text, or `limits.lifetime` s since it began, whichever comes first. Created when the stream begins."""

    def __init__(self, limits: StreamLimits, expire: Callable[[StreamTimeout], None]):
        self._loop = asyncio.get_running_loop()
        self._limits = limits
        self._expire = expire
        self._end_of_life = self._loop.time() + limits.lifetime
        self._timer: asyncio.TimerHandle | None = None
        self.text_arrived()

    def text_arrived(self) -> None:
        """The client is still writing: the pause starts again (the lifetime does not)."""
        self.cancel()
        pause_ends = self._loop.time() + self._limits.pause
        if pause_ends < self._end_of_life:
            when, why = pause_ends, f"no text for {self._limits.pause:g} s (server.stream_pause_timeout)"
        else:
            when, why = self._end_of_life, (f"the stream was open for {self._limits.lifetime:g} s without its end "
                                            "(server.stream_max_seconds)")
        self._timer = self._loop.call_at(when, self._fire, why)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, text: str) -> None:
        self._timer = None
        self._expire(StreamTimeout(text))
