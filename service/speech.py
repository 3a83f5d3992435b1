"""The speech service the Wyoming server talks to: the front end (text -> Sequence) over the engine core.

`Engine` is the one object a process makes: it resolves the model, reads the model directory once, and joins
`RequestBuilder` (service.frontend) and `EngineCore` (service.engine). The server sees it through
`service.wyoming.speech_engine.SpeechEngine`.
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator

import numpy as np

from service.broadcast import Broadcasts
from service.config import EngineSettings, VoicesSettings
from service.engine.core import EngineCore, EngineStats
from service.errors import RequestFailed
from service.export.builtin import resolve_model
from service.frontend.requests import RequestBuilder, TextFeed
from service.frontend.voices import VoiceInfo
from service.metrics import Metrics
from service.modeldir.manifest import ModelDir

# Audio a shared generation keeps for listeners who join it late (int16 mono: ~2.9 MB at 24 kHz); a generation
# longer than this takes no new listener.
REPLAY_SECONDS = 60


class Engine:
    def __init__(self, settings: EngineSettings, metrics: Metrics | None = None,
                 voices: VoicesSettings | None = None):
        self.settings = settings
        self.model = ModelDir(resolve_model(settings.model, settings.data_dir))
        self.requests = RequestBuilder(self.model, settings, voices)
        self.core = EngineCore(self.model, settings, metrics)
        self.metrics = self.core.metrics
        self.sample_rate = self.core.sample_rate
        # What tests and benchmarks inspect between steps (read only on the engine thread while it runs).
        self.scheduler = self.core.scheduler
        self.blocks = self.core.blocks
        self._broadcasts = Broadcasts(REPLAY_SECONDS * self.sample_rate * 2, self.metrics.shared_requests_total.inc)

    def start(self) -> None:
        """Blocks for the warm-up (seconds on a big model): call it off the event loop."""
        self.core.start(self.requests.warm_up())

    def stop(self, timeout: float = 10.0) -> None:
        self.core.stop(timeout)

    @property
    def alive(self) -> bool:
        return self.core.alive

    def stats(self) -> EngineStats:
        return self.core.stats()

    def summary(self) -> list[str]:
        return self.core.summary()

    @property
    def voices(self) -> tuple[VoiceInfo, ...]:
        """The installed voices, the default first; edits to the config file's voices section show up here."""
        return self.requests.current_voices()

    async def synthesize(
        self,
        text: str | AsyncIterable[str],
        voice: str | None = None,
        speaker: str | None = None,
        language: str | None = None,
        seed: int | None = None,
        codes_out: list[np.ndarray] | None = None,
        needed: asyncio.Event | None = None,
        about: dict | None = None,
    ) -> AsyncGenerator[bytes, None]:
        """Yields int16 little-endian mono PCM at `sample_rate` as it is generated (see EngineCore.submit).

        `text` is the whole text, or the pieces of a text still being written (each later piece starting with
        the whitespace before it): speech then starts with the first piece, and each piece is fed to the running
        request as it comes. The request is built on a worker thread (normalising, prompt graph). `about`, when
        given, receives the voice, language and whether the language was told from the text ("voice",
        "language", "language_detected")."""
        if isinstance(text, str) and self.settings.share_identical and codes_out is None:
            key = (text, voice, speaker, language, seed)
            start = functools.partial(self._synthesize, text, voice, speaker, language, seed, None)
            async for chunk in self._broadcasts.listen(key, start, needed, about):
                yield chunk
            return
        async for chunk in self._synthesize(text, voice, speaker, language, seed, codes_out, needed, about):
            yield chunk

    async def _synthesize(self, text: str | AsyncIterable[str], voice: str | None, speaker: str | None,
                          language: str | None, seed: int | None, codes_out: list[np.ndarray] | None,
                          needed: asyncio.Event | None, about: dict | None) -> AsyncGenerator[bytes, None]:
        pieces = None
        if not isinstance(text, str):
            pieces = aiter(text)
            first = await anext(pieces, "")
            # The language is decided with the first request (its id is in the prompt, its number rules apply to
            # every piece): when its first words do not tell it, wait for a few more.
            while self.requests.language_unclear(first, voice, speaker, language):
                if (more := await anext(pieces, None)) is None:
                    break
                first += more
            if not self.requests.can_stream(voice, speaker):  # the whole text first
                first += "".join([piece async for piece in pieces])
                pieces = None
            text = first
        if pieces is None:
            seq = await asyncio.to_thread(self.requests.build, text, voice, speaker, language, seed)
            feed = None
        else:
            seq, feed = await asyncio.to_thread(self.requests.build_open, text, voice, speaker, language, seed)
        if about is not None:
            about.update(voice=seq.voice, language=seq.language, language_detected=seq.language_detected)
        pcm = self.core.submit(seq, needed=needed, codes_out=codes_out)
        feeder = None
        if pieces is not None and feed is not None:
            feeder = asyncio.create_task(self._feed(seq.id, pieces, feed))
        try:
            async for chunk in pcm:
                yield chunk
            if feeder is not None:
                await feeder  # the text's error, if it failed after the speech had ended
        except RequestFailed:
            failure = feeder.exception() if feeder is not None and feeder.done() else None
            if failure is not None:
                raise failure from None  # the text failed, and the request was aborted for it
            raise
        finally:
            if feeder is not None:
                feeder.cancel()
            await pcm.aclose()

    async def _feed(self, seq_id: int, pieces: AsyncIterator[str], feed: TextFeed) -> None:
        """Each later piece into the running request, then the text's end. An error of the text (the reply
        failed, or a piece cannot be spoken) aborts the request and is raised to the reader."""
        try:
            async for piece in pieces:
                rows, cap = await asyncio.to_thread(feed.rows, piece)
                if len(rows):
                    self.core.feed(seq_id, rows, cap, close=False)
            rows, cap = feed.close()
            self.core.feed(seq_id, rows, cap, close=True)
        except Exception:
            self.core.abort(seq_id)
            raise
