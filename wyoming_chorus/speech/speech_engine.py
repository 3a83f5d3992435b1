"""What the Wyoming server and the studio need of the speech service (speech.speech.Speech): they depend on this,
not on the engine, so a test can serve from anything that speaks it."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from wyoming_chorus.speech.api import Handle, Request


class Voice(Protocol):
    name: str
    description: str
    languages: Sequence[str]


class SpeechEngine(Protocol):
    @property
    def voices(self) -> Sequence[Voice]: ...

    sample_rate: int

    def open(self, request: Request) -> Handle: ...
