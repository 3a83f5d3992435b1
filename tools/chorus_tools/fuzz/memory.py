"""What the fuzzer's process holds from case to case: resident memory and live Python objects, read after a warm-up
and at the end, so that a run says whether cases leave anything behind (issue 38: "RSS still rising ~4.5 KB a case").

The server runs in the fuzzer's own process, so the figures are the server's and the fuzzer's together. Before each
reading the garbage collector runs and glibc's allocator hands its free pages back (malloc_trim): what is left is
memory something holds, not memory the allocator keeps for reuse, which would otherwise look like creep for the
first thousands of cases while its per-thread arenas fill.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from dataclasses import dataclass

from chorus_tools.probes import rss_mb

WARM_UP_CASES = 1000  # caches, arenas and the engine's compiled shapes fill during these; at most a fifth of a run


@dataclass(frozen=True)
class Reading:
    cases: int
    rss_mb: float
    objects: int  # live objects the garbage collector tracks


def read(cases: int) -> Reading:
    gc.collect()
    _trim()
    return Reading(cases, rss_mb(os.getpid()), len(gc.get_objects()))


def warm_up_cases(total: int) -> int:
    return min(WARM_UP_CASES, total // 5)


def growth(start: Reading, end: Reading) -> str:
    """One line: RSS and objects from the warm-up to the end, per case."""
    cases = max(end.cases - start.cases, 1)
    return (f"memory: RSS {start.rss_mb:.1f} MB after {start.cases} cases (warm-up), {end.rss_mb:.1f} MB after "
            f"{end.cases}: {(end.rss_mb - start.rss_mb) * 1024 / cases:+.2f} KB a case; Python objects "
            f"{end.objects - start.objects:+d}")


def _trim() -> None:
    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):  # not glibc: the reading includes what the allocator keeps
        pass
