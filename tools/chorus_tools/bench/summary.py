"""tools/bench.py's per-scenario figures from its outcomes: first audio, RTF, throughput, and what listeners hear
through Home Assistant 2026.11 (chorus_tools/bench/listener.py)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from chorus_tools.bench.workloads import Outcome, Scenario


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def summarise(scenario: Scenario, keep: Callable[[Outcome], bool] = lambda o: True) -> dict:
    """Time to first audio p50/p95/p99, per-request RTF (complete requests; cut ones apart), aggregate audio seconds
    per wall second (first start to last end), errors; and what listeners hear through Home Assistant 2026.11: the
    first sound p50/p95, the satellites that gave up before it, underruns and their seconds per reply that had audio,
    and the replies heard with no gap ("held": of the replies without an error)."""
    chosen = [o for o in scenario.outcomes if keep(o)]
    firsts = [o.ttfa_s for o in chosen if o.ttfa_s is not None and o.error is None]
    rtfs = [o.rtf for o in chosen if o.complete and o.rtf is not None]
    partial = [o.rtf for o in chosen if o.cut and o.rtf is not None]
    ends = [o.end_s for o in chosen if o.end_s is not None]
    span = (max(ends) - min(o.start_s for o in chosen)) if ends else 0.0
    audio = sum(o.audio_s for o in chosen if o.error is None)
    sounds = [o.first_sound_s for o in chosen if o.first_sound_s is not None and o.error is None]
    heard = [o for o in chosen if o.error is None and o.audio_s > 0]
    return {
        "requests": len(chosen),
        "errors": sum(o.error is not None for o in chosen),
        "cut": sum(o.cut for o in chosen),
        "ttfa_p50_s": percentile(firsts, 50),
        "ttfa_p95_s": percentile(firsts, 95),
        "ttfa_p99_s": percentile(firsts, 99),
        "first_sound_p50_s": percentile(sounds, 50),
        "first_sound_p95_s": percentile(sounds, 95),
        "gave_up": sum(o.gave_up for o in chosen if o.error is None),
        "underruns_per_request": sum(o.underruns for o in heard) / len(heard) if heard else None,
        "underrun_s_per_request": sum(o.underrun_s for o in heard) / len(heard) if heard else None,
        "underrun_s_max": max((o.underrun_s for o in heard), default=None),
        "held": sum(o.gap_free for o in chosen),
        "rtf_p50": percentile(rtfs, 50),
        "rtf_max": max(rtfs) if rtfs else None,
        "rtf_partial_p50": percentile(partial, 50),
        "audio_s": audio,
        "span_s": span,
        "audio_s_per_wall_s": audio / span if span > 0 else None,
        "rtfs": rtfs,
    }


def pooled(rounds: list[Scenario]) -> Scenario:
    """The rounds of one scenario (tools/bench.py's A-B-A-B) as one: their replies together, each round's clock moved
    to begin where the one before ended, so that summarise()'s wall span is the rounds' spans added up (aggregate audio
    per second pooled over the rounds, not every round's audio over the longest one). Per-reply figures (first audio,
    RTF, what a listener hears) are relative to the reply's own start and do not move."""
    outcomes: list[Outcome] = []
    at = 0.0
    for scenario in rounds:
        if not scenario.outcomes:
            continue
        first = min(o.start_s for o in scenario.outcomes)
        last = max((o.end_s for o in scenario.outcomes if o.end_s is not None), default=first)
        outcomes += [replace(o, start_s=o.start_s - first + at, end_s=None if o.end_s is None else o.end_s - first + at)
                     for o in scenario.outcomes]
        at += last - first
    extra = {**(rounds[0].extra if rounds else {}), "rounds": len(rounds)}
    return Scenario(rounds[0].name if rounds else "", outcomes, sum(s.wall_s for s in rounds), extra)
