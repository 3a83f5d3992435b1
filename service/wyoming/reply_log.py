"""One INFO line per reply, so that a household can tell from the log whether Home Assistant ever connected, what
it asked for and how fast it was answered:

    reply to 192.168.1.20:51234: voice ryan, language de (detected), 45 characters, first audio 0.31 s,
    4.00 s of audio, RTF 0.12, ok
"""
from __future__ import annotations

import logging
import time

_LOG = logging.getLogger("service.replies")


class ReplyLog:
    """Collects one reply's figures while it is spoken. `about` is handed to the engine, which fills in the voice
    and language it chose (see Engine.synthesize)."""

    def __init__(self, peer: str, sample_rate: int, sample_width: int):
        self.peer = peer
        self.about: dict = {}
        self._bytes_per_second = sample_rate * sample_width
        self._started = time.monotonic()
        self._first_audio: float | None = None
        self._audio_bytes = 0

    def audio(self, pcm: bytes) -> None:
        if self._first_audio is None and pcm:
            self._first_audio = time.monotonic()
        self._audio_bytes += len(pcm)

    def done(self, status: str, characters: int, text_since: float | None) -> None:
        """`text_since`: when the reply's first text arrived (a stream's text may come long after it opened)."""
        ended = time.monotonic()
        start = text_since if text_since is not None else self._started
        seconds = self._audio_bytes / self._bytes_per_second
        language = self.about.get("language") or "auto"
        if self.about.get("language_detected"):
            language += " (detected)"
        first = f"first audio {self._first_audio - start:.2f} s" if self._first_audio is not None else "no audio"
        rtf = f"RTF {(ended - start) / seconds:.2f}" if seconds else "RTF -"
        _LOG.info("reply to %s: voice %s, language %s, %d characters, %s, %.2f s of audio, %s, %s",
                  self.peer, self.about.get("voice") or "default", language, characters, first, seconds, rtf, status)
