"""The engine steps aside while a reply's first block waits at the codec thread (scheduler.policy: playback).

A reply's first sound needs its first decoder block (4 frames) decoded. The engine's steps and the codec's blocks
share the CPU's cores, and at once each runs ~1.5x slower (2 cores, 0.6b): a first block decoded beside a step takes
~100 ms instead of ~60. When several rooms start together their first blocks come due together, and each one's sound
waits for the blocks before it: eight of them beside the steps of eight took 0.1-0.12 s apiece. So while a reply
whose listener has heard nothing has its first block made and not yet decoded, the engine does not step: it waits for
the codec to hand that block over, then looks again. A burst's last first sound comes sooner by the cores the steps
would have taken. The others lose about one block's decoding per new reply, once (its first block only), which the
codec would have spent on the cores beside them anyway.

The wait is bounded by the codec's progress: after `max_seconds` with no first block handed over, the engine steps
until the block is out, so a codec that is stuck or gone cannot stop generation. A codec that keeps handing first
blocks over keeps the engine waiting while more are due (AVX2 in f32: eight first blocks take ~1.5 s, and a cap on
the whole run let a step at batch 1 run beside the last block). Messages sent meanwhile are read at the next step.

A reply with no company (nobody else's request running) is not waited for: the steps the wait skips would all have
been its own, so its first sound comes sooner only by as much as its second block comes later, and one made barely
faster than real time heard that as a gap right after its first block (0.6b INT8 on 2 Zen 4 cores, one room at RTF
0.89: a gap of 0.04-0.05 s after the first block in each of 4 replies, none through FCFS; first sound 0.04 s sooner).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from .sequence import Sequence

# How long the engine waits with no first block handed over before it steps anyway: one first block of the 0.6b codec
# on 2 cores takes 0.07 s (bf16) to 0.2 s (f32, AVX2).
MAX_HOLD_SECONDS = 1.0
# Each wait ends after this long at most, to look at the requests again (one may have ended meanwhile).
WAIT_SECONDS = 0.1


class FirstBlocks(Protocol):
    """What the hold reads of the codec thread's progress (FirstBlocksOut; tests script it)."""

    @property
    def block_frames(self) -> int: ...
    def first_block_out(self, seq_id: int) -> bool: ...
    def clear_block_signal(self) -> None: ...
    def wait_for_a_first_block(self, timeout: float) -> bool: ...


class FirstBlocksOut:
    """Which replies' first block the codec thread has handed over (or whose decoding failed), until their stream
    ends. The codec thread writes it (through the pacing it was given), the engine thread reads it: set membership is
    atomic, and a block handed over after the engine's look sets the Event it waits on, so no lock is needed."""

    def __init__(self, block_frames: int):
        self.block_frames = block_frames  # a reply's first block is made once it has this many frames
        self._out: set[int] = set()
        self._signal = threading.Event()  # set whenever a reply joins _out

    # ---- the codec thread --------------------------------------------------------------------------------------
    def handed_over(self, seq_id: int) -> None:
        """A block of the reply went to its sink (or none will come: its decoding failed)."""
        if seq_id not in self._out:
            self._out.add(seq_id)
            self._signal.set()

    def ended(self, seq_id: int) -> None:
        self._out.discard(seq_id)

    # ---- the engine thread -------------------------------------------------------------------------------------
    def first_block_out(self, seq_id: int) -> bool:
        return seq_id in self._out

    def clear_block_signal(self) -> None:
        """Before the engine looks at first_block_out: a block handed over after that sets the signal again."""
        self._signal.clear()

    def wait_for_a_first_block(self, timeout: float) -> bool:
        """Until some reply's first block is handed over (since clear_block_signal), or `timeout` seconds; whether
        one was."""
        return self._signal.wait(timeout)


class FirstAudioHold:
    def __init__(self, codec: FirstBlocks, waits_for_first_audio: Callable[[Sequence], bool],
                 max_seconds: float = MAX_HOLD_SECONDS, now: Callable[[], float] = time.monotonic):
        """`waits_for_first_audio(seq)`: its listener has heard nothing of the reply yet (the playback policy's)."""
        self._codec = codec
        self._waits = waits_for_first_audio
        self._max_seconds = max_seconds
        self._now = now
        self._since: float | None = None  # when the current run of waits began, or last saw a first block out

    def wait(self, running: Iterable[Sequence]) -> bool:
        """Waits (once, briefly) if a first block the listener waits for is at the codec; True if it waited. The
        caller loops: it steps only once this says False. `running`: the requests with a sink (audio to make)."""
        self._codec.clear_block_signal()  # before the look: a block handed over after it wakes the wait below
        running = list(running)
        if not (has_company(running) and any(self._first_block_due(seq) for seq in running)):
            self._since = None
            return False
        now = self._now()
        if self._since is None:
            self._since = now
        elif now - self._since >= self._max_seconds:
            return False  # no block out for that long: step until the due one is out (the run ends when it is)
        if self._codec.wait_for_a_first_block(WAIT_SECONDS):
            self._since = self._now()  # the codec is getting on: the bound counts from here
        return True

    def _first_block_due(self, seq: Sequence) -> bool:
        return (len(seq.frames) >= self._codec.block_frames and self._waits(seq)
                and not self._codec.first_block_out(seq.id))


def has_company(running: list[Sequence]) -> bool:
    """More than one listener's requests run (a reply's sentences share its listener's clock; a request without one,
    synth or a benchmark, is company of its own)."""
    listeners = {id(seq.clock) if seq.clock is not None else ("request", seq.id) for seq in running}
    return len(listeners) > 1
