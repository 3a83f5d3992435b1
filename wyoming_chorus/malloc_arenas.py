"""Few malloc arenas, so memory freed by one thread is reused by the next instead of stranded in its own heap.

glibc gives every thread that allocates under contention an arena of its own, up to 8 per core, and memory freed into
an arena serves only later allocations that land in the same one. The server's threads (event loop, front end,
engine, codec, the studio's HTTP thread, OpenVINO's workers) each allocate a little per request and free it on
another thread, so RSS crept up with every studio clone cycle (+37 KB a cycle after warm-up) with no Python object
left behind; capped at one arena the same cycle kept 1.3 KB, capped at two 13-29 KB (uncapped 37-43 KB, alternated
runs). Two keep part of that gain while the engine and the codec (the two threads that run at once on a 2-core box)
need not wait for each other's allocations. A MALLOC_ARENA_MAX set by the user is left as it is.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def cap_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap this process's malloc arenas; False where that is not glibc's to do or the user chose a number."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): its allocator has no arenas to cap
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))
