"""The typical value of recent timings, as a listener who plays at once feels them: their mean without the slowest
twentieth.

Not the median. A box whose every fourth step shares the cores with a codec block has two kinds of period; the median
is the faster kind when fewer than half are slow, but a room's frames come at the mean rate, and Home Assistant
2026.11 plays from the first 0.1-0.5 s of audio, so a room that falls behind on average hears gaps however fast the
typical step is (a 0.6b room measured RTF 1.13 while the median period said "holds 1"). The slowest twentieth (at
least one value) is left out so that a stall or two (another process taking the cores) moves nothing.
"""
from __future__ import annotations

from collections.abc import Iterable


def typical(values: Iterable[float]) -> float:
    """The mean of `values` without the slowest twentieth of them (at least one, when there are five or more)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    kept = ordered[:len(ordered) - max(1, len(ordered) // 20)] if len(ordered) >= 5 else ordered
    return sum(kept) / len(kept)
