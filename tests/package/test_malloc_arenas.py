"""The package caps glibc's malloc arenas when imported (wyoming_chorus.malloc_arenas): threads that allocate at once
share two heaps instead of one each, unless the user set MALLOC_ARENA_MAX. Counted by glibc itself (malloc_info's
<heap> elements) in a fresh interpreter, where six threads allocate at the same time."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

COUNT_HEAPS = r"""
import ctypes, ctypes.util, re, tempfile, threading
import wyoming_chorus
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
barrier = threading.Barrier(6)
kept = []
def allocate():
    kept.append(libc.malloc(4096))  # ctypes drops the GIL: each thread reaches malloc on its own
    barrier.wait()  # all alive at once, so none hands its arena on to the next
threads = [threading.Thread(target=allocate) for _ in range(6)]
for thread in threads: thread.start()
for thread in threads: thread.join()
path = tempfile.mktemp()
stream = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(stream))
libc.fclose(ctypes.c_void_p(stream))
print(len(re.findall(r"<heap nr=", open(path).read())))
"""

glibc = pytest.mark.skipif(not os.confstr("CS_GNU_LIBC_VERSION"), reason="malloc arenas are glibc's")


def heaps(env_extra: dict[str, str]) -> int:
    env = {key: value for key, value in os.environ.items() if key != "MALLOC_ARENA_MAX"} | env_extra
    done = subprocess.run([sys.executable, "-c", COUNT_HEAPS], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return int(done.stdout.split()[-1])


@glibc
def test_threads_share_two_arenas_after_import():
    assert heaps({}) <= 2


@glibc
def test_a_users_malloc_arena_max_is_left_alone():
    # Also shows the count sees arenas at all: with room for eight, the six threads take more than two.
    assert heaps({"MALLOC_ARENA_MAX": "8"}) > 2
