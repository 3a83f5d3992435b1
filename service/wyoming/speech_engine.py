"""What the Wyoming side needs of the speech service (service.speech.Engine): the server depends on this, not on
the engine, so a test can serve from anything that speaks it."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable, Sequence
from typing import Protocol


class Voice(Protocol):
    name: str
    description: str
    languages: Sequence[str]


class SpeechEngine(Protocol):
    @property
    def voices(self) -> Sequence[Voice]: ...

    sample_rate: int

    def synthesize(
        self, text: str | AsyncIterable[str], voice: str | None = None, speaker: str | None = None,
        language: str | None = None, seed: int | None = None, codes_out: list | None = None,
        needed: asyncio.Event | None = None, about: dict | None = None,
    ) -> AsyncGenerator[bytes, None]: ...
