"""The speech service the Wyoming server talks to: the front-end thread (text -> Sequence) over the engine core.

`Speech` is the one object a process makes, over a model directory already resolved (app.py): it joins the
front end (frontend) and `EngineCore` (engine). A request goes in as a `Request` and its audio
comes back through a `Handle` (speech.api); the server sees this through
`wyoming_chorus.speech.speech_engine.SpeechEngine`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator

from wyoming_chorus.config import EngineSettings, SchedulerSettings, VoicesSettings
from wyoming_chorus.engine.core import EngineCore
from wyoming_chorus.engine.stats import EngineStats
from wyoming_chorus.engine.summary import summary
from wyoming_chorus.frontend.requests import RequestBuilder
from wyoming_chorus.frontend.voices import VoiceInfo
from wyoming_chorus.frontend.worker import FrontEnd
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.api import Handle, Request
from wyoming_chorus.speech.sharing import Sharing

# Audio a shared generation keeps for listeners who join it late (int16 mono: ~2.9 MB at 24 kHz); a generation
# longer than this takes no new listener.
REPLAY_SECONDS = 60


class Speech:
    def __init__(self, model: ModelDir, settings: EngineSettings, metrics: Metrics | None = None,
                 voices: VoicesSettings | None = None, scheduling: SchedulerSettings | None = None):
        """`model` is the directory `settings.model` resolved to (wyoming_chorus.app.model_dir)."""
        self.settings = settings
        self.model = model
        # Used by the front-end thread alone once started (tests may build with it before).
        self.requests = RequestBuilder(self.model, settings, voices)
        self.core = EngineCore(self.model, settings, metrics, scheduling=scheduling)
        self.front_end = FrontEnd(self.requests, self.core)
        self.metrics = self.core.metrics
        self.sample_rate = self.core.sample_rate
        self._sharing = Sharing(REPLAY_SECONDS * self.sample_rate * 2, self.metrics.shared_requests_total.inc)

    def start(self) -> None:
        """Blocks for the warm-up (seconds on a big model): call it off the event loop."""
        self.core.start(self.requests.warm_up(), probe=self.requests.cost_probe)
        self.front_end.start()

    def stop(self, timeout: float = 10.0) -> None:
        self.front_end.stop(timeout)
        self.core.stop(timeout)

    @property
    def alive(self) -> bool:
        return self.core.alive and self.front_end.alive

    def stats(self) -> EngineStats:
        """The engine's last published snapshot, alive as of now (the front-end thread too)."""
        return dataclasses.replace(self.core.stats(), alive=self.alive)

    def summary(self) -> list[str]:
        return summary(self.model, self.core.runner, self.core.codec.choice, self.settings, self.core.lm_precision)

    @property
    def voices(self) -> tuple[VoiceInfo, ...]:
        """The installed voices, the default first; edits to the config file's voices section show up here."""
        return self.requests.current_voices()

    def open(self, request: Request) -> Handle:
        """Starts `request` (call on the event loop); its int16 little-endian mono PCM at `sample_rate` comes
        through the handle as it is generated. Identical whole-text requests share one generation."""
        if request.text is not None and self.settings.share_identical and not request.keep_codes:
            return self._sharing.open(request, self._open)
        return self._open(request)

    def _open(self, request: Request) -> Handle:
        ticket = self.front_end.ticket()
        # Audio made ahead of need says nothing of how long a listener waited.
        first_audio = None if request.deferred else self.metrics.time_to_first_audio.observe
        handle = Handle(request, ticket, first_audio)
        ticket.open(handle)
        return handle

    async def generate(self, request: Request) -> AsyncGenerator[bytes, None]:
        """The PCM of a whole-text request, for offline use (synth, tests); closing early aborts it."""
        handle = self.open(request)
        try:
            async for pcm in handle:
                yield pcm
        finally:
            handle.cancel()
