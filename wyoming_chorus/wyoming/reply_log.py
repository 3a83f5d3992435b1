"""One INFO line per reply, so that a household can tell from the log whether Home Assistant ever connected, what
it asked for and how fast it was answered:

    reply to 192.168.1.20:51234: voice ryan, language de (detected), 45 characters, first audio 0.31 s,
    4.00 s of audio, RTF 0.12, ok

and one WARNING line before it when the text is in a language the model does not speak:

    reply to 192.168.1.20:51234: text in Dutch (nl), which the model does not speak: spoken anyway, ...
"""
from __future__ import annotations

import logging
import time

from wyoming_chorus.speech.api import RequestInfo

_LOG = logging.getLogger("wyoming_chorus.replies")


class ReplyLog:
    """Collects one reply's figures while it is spoken, with what the engine chose for each of its requests."""

    def __init__(self, peer: str, sample_rate: int, sample_width: int):
        self.peer = peer
        self._voice: str | None = None
        self._languages: list[str] = []  # each language in the order the reply's requests spoke them
        self._warned = False  # about a language the model does not speak: once per reply, however many sentences
        self._bytes_per_second = sample_rate * sample_width
        self.started = time.monotonic()
        self._first_audio: float | None = None
        self._audio_bytes = 0

    def spoke(self, info: RequestInfo) -> None:
        """One of the reply's requests (a streamed reply is several): the latest voice, and its language."""
        self._voice = info.voice
        label = (info.language or "auto") + (" (detected)" if info.language_detected else "")
        if not self._languages or self._languages[-1] != label:
            self._languages.append(label)
        if info.unspoken and not self._warned:
            self._warned = True
            _LOG.warning("reply to %s: text in %s", self.peer, info.unspoken)

    def audio(self, pcm: bytes) -> None:
        if self._first_audio is None and pcm:
            self._first_audio = time.monotonic()
        self._audio_bytes += len(pcm)

    def done(self, status: str, characters: int, text_since: float | None) -> None:
        """`text_since`: when the reply's first text arrived (a stream's text may come long after it opened)."""
        ended = time.monotonic()
        start = text_since if text_since is not None else self.started
        seconds = self._audio_bytes / self._bytes_per_second
        spoken = self._languages or ["auto"]
        language = f"language {spoken[0]}" if len(spoken) == 1 else f"languages {', '.join(spoken)}"
        first = f"first audio {self._first_audio - start:.2f} s" if self._first_audio is not None else "no audio"
        rtf = f"RTF {(ended - start) / seconds:.2f}" if seconds else "RTF -"
        _LOG.info("reply to %s: voice %s, %s, %d characters, %s, %.2f s of audio, %s, %s",
                  self.peer, self._voice or "default", language, characters, first, seconds, rtf, status)
