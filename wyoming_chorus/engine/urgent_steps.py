"""Whether the engine is making frames for a reply in its head start, so that the codec thread can hold back the
blocks of listeners who have audio to spare meanwhile (scheduler.policy: playback).

The engine's steps and the codec's decoding share the CPU's cores: run at once, each runs ~1.5x slower (2 cores,
0.6b). While a new announcement is in its head start the playback policy gives it steps of its own, yet the codec
would still be decoding the readers' backlog beside them, although their listeners have seconds of audio buffered
and lose nothing by waiting. The flag is a state, not a per-step pulse: it stays up from the first step that runs a
head start to the first one that runs none (or an idle engine), so the codec cannot slip a block into the gap
between two of the announcement's steps. The engine thread writes it, the codec thread reads it; no lock.
"""
from __future__ import annotations

import threading


class UrgentSteps:
    def __init__(self) -> None:
        self._quiet = threading.Event()
        self._quiet.set()

    def mark(self, urgent: bool) -> None:
        """Before each step: whether it runs a reply in its head start (False when the engine has nothing to run)."""
        if urgent:
            self._quiet.clear()
        else:
            self._quiet.set()

    def busy(self) -> bool:
        return not self._quiet.is_set()

    def wait_quiet(self, timeout: float) -> None:
        self._quiet.wait(timeout)
