"""Whether the engine is making frames for replies whose listeners wait for them, so that the codec thread can hold
back the blocks of listeners who lose little by waiting meanwhile (scheduler.policy: playback).

The engine's steps and the codec's decoding share the CPU's cores: run at once, each runs ~1.5x slower (2 cores,
0.6b). Two levels, the engine's step says which:

- FIRST_AUDIO: a step runs a reply waiting for its first block (a new announcement's prompt and first frames).
  Until that block reaches the writer, listeners with at least `spare_seconds` of audio left wait: the first sound
  is what a household waits for (a Voice PE gives up after ~2 s), and they lose nothing by it. Those with less do
  not: a listener that plays from the first chunk (Home Assistant 2026.11) hears every late block as a gap.
- HEAD_START (only with scheduler.head_start_seconds > 0): a step runs a reply in its head start (less than
  head_start_seconds written). Listeners with at least `spare_seconds` of audio left wait. Not those in their own
  head start, however much they have to spare: their first sound through a conversion that holds the first
  head_start_seconds waits for that much written.

The level is a state, not a per-step pulse: it stays from the first step that runs such a reply to the first one that
runs none (or an idle engine), so the codec cannot slip a block into the gap between two of the announcement's
steps. The engine thread writes it, the codec thread reads it; no lock (one int, replaced whole).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .playback_policy import PlaybackPolicy
    from .sequence import Sequence

QUIET, HEAD_START, FIRST_AUDIO = 0, 1, 2


class UrgentSteps:
    def __init__(self) -> None:
        self._level = QUIET

    def mark(self, level: int) -> None:
        """Before each step: the most urgent reply it runs (QUIET when it runs none, or the engine has nothing)."""
        self._level = level

    @property
    def level(self) -> int:
        return self._level


def codec_level(policy: PlaybackPolicy, batch: list[Sequence]) -> int:
    """The level of a step that runs `batch`."""
    if any(policy.waits_for_first_audio(seq) for seq in batch):
        return FIRST_AUDIO
    if any(policy.in_first_seconds(seq) for seq in batch):
        return HEAD_START
    return QUIET
