"""One INFO line per reply, so that a household can tell from the log whether Home Assistant ever connected, what
it asked for and how fast it was answered:

    reply to 192.168.1.20:51234: voice ryan, language de (detected), 45 characters, first audio 0.31 s,
    4.00 s of audio, RTF 0.12, ok
"""
from __future__ import annotations

import logging
import time
from typing import Any

_LOG = logging.getLogger("service.replies")


class _About(dict):
    """The dict every request of one reply fills in (voice, language, language_detected): the latest values, and
    each language in the order the reply's requests spoke them (a streamed reply is several requests)."""

    def __init__(self) -> None:
        super().__init__()
        self.languages: list[str] = []

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        label = (self.get("language") or "auto") + (" (detected)" if self.get("language_detected") else "")
        if not self.languages or self.languages[-1] != label:
            self.languages.append(label)


class ReplyLog:
    """Collects one reply's figures while it is spoken. `about` is handed to the engine, which fills in the voice
    and language it chose (see Engine.synthesize)."""

    def __init__(self, peer: str, sample_rate: int, sample_width: int):
        self.peer = peer
        self.about: _About = _About()
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
        spoken = self.about.languages or ["auto"]
        language = f"language {spoken[0]}" if len(spoken) == 1 else f"languages {', '.join(spoken)}"
        first = f"first audio {self._first_audio - start:.2f} s" if self._first_audio is not None else "no audio"
        rtf = f"RTF {(ended - start) / seconds:.2f}" if seconds else "RTF -"
        _LOG.info("reply to %s: voice %s, %s, %d characters, %s, %.2f s of audio, %s, %s",
                  self.peer, self.about.get("voice") or "default", language, characters, first, seconds, rtf, status)
