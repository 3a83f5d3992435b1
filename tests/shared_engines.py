"""Started engines and compiled native runners kept for the whole session, one per distinct settings key, so that
tests asking for the same settings share one warm-up and one compile (tests/conftest.py hands them out). A shared
engine must come back idle with every KV block free: `SharedEngines.check_idle` fails the test that left it
otherwise. Tests that stop, break or fault an engine keep one of their own."""
from __future__ import annotations

import time
from collections.abc import Hashable

from wyoming_chorus import _native
from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings, VoicesSettings
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.speech import Speech

# How long a test's last request may take to retire after the test returned (a cancelled reply frees its blocks at
# the engine's next step): generous, as in helpers.TIMEOUT, for a loaded machine. Not a speed assertion.
SETTLE_SECONDS = 60.0


class SharedEngines:
    def __init__(self) -> None:
        self._engines: dict[Hashable, Speech] = {}
        self._runners: dict[Hashable, _native.Runner] = {}

    def engine(self, settings: EngineSettings, model: ModelDir | None = None,
               voices: VoicesSettings | None = None) -> Speech:
        """The started engine for these settings (and model directory, and voices), started on first use."""
        model = model or model_dir(settings)
        key = (str(model.path.resolve()), settings, voices)
        if key not in self._engines:
            engine = Speech(model, settings, voices=voices)
            engine.start()
            self._engines[key] = engine
        return self._engines[key]

    def runner(self, model, **options) -> _native.Runner:
        """The compiled native runner of `model` (native_steps.Model) with these `Model.runner` options."""
        key = (str(model.dir), tuple(sorted(options.items())))
        if key not in self._runners:
            self._runners[key] = model.runner(**options)
        return self._runners[key]

    @staticmethod
    def check_idle(engine: Speech) -> None:
        """Waits for `engine` to retire what the test left, then fails unless it is alive, runs and holds nothing,
        and the scheduler's and block pool's books agree."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while not _idle(stats := engine.stats()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert engine.alive, "a shared engine was stopped by a test: make an engine of your own"
        assert _idle(stats), f"a test left the shared engine busy or holding KV blocks: {stats}"
        engine.core.check_integrity()

    def stop(self) -> None:
        for engine in self._engines.values():
            engine.stop()
        self._engines.clear()
        self._runners.clear()


def _idle(stats) -> bool:
    return (stats.running, stats.waiting, stats.awaiting_text, stats.blocks_used) == (0, 0, 0, 0)
