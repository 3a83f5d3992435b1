"""What the codec thread can carry, for the capacity figure (engine/step_metrics.py): its seconds of decoding per
second of audio, and the rooms whose audio it still owes.

A room is in real time only if the codec also turns its frames into audio at least as fast as they play: the engine
loop can give it a frame per frame's duration while its audio falls further behind at the codec (f32 on AVX2, 0.6b:
~0.45 s of decoding per audio second, so three rooms need 1.35 s per second). The codec thread decodes one request's
block at a time (engine/audio_output.py: no batch across requests), so N rooms cost it N times one room's seconds,
and it has one second per second: it holds the most N with N x cost <= 1, and makes each of N rooms 1 / (N x cost)
seconds of audio per second (the first-chunk hold's rate, engine/first_chunk_hold.py).

The cost is the wall time of each block the thread hands over (decoding, conversion, hand-off), measured where it
runs: beside the engine's steps, on the same cores, so the steps' share of the cores is in it, as the codec's share
is in the loop's periods. Both are measured at the load the box has now; a figure for more rooms than that is an
extrapolation (more rooms would slow both a little more). Only whole blocks count: a reply's short last block costs a
whole one, but once per reply, not per second it plays. The typical cost of the recent blocks (engine/typical.py):
one block stalled by another process does not move it.

Written on the codec thread, read on the engine thread: each published value is replaced whole (no lock).
"""
from __future__ import annotations

from collections import deque

from .typical import typical

# The blocks the cost is read from (about 10 s of one room's audio), and how many it needs before it stands.
_RECENT_BLOCKS = 32
_MEASURED_BLOCKS = 3


class CodecLoad:
    def __init__(self) -> None:
        self._recent: deque[float] = deque(maxlen=_RECENT_BLOCKS)  # seconds per audio second, per whole block
        self.seconds_per_audio_second: float | None = None  # None until enough blocks were measured
        self.rooms: frozenset[int] = frozenset()  # id() of each playback clock whose audio the codec still owes

    def block_done(self, seconds: float, audio_seconds: float) -> None:
        """A whole block of `audio_seconds` took `seconds` of the codec thread's time."""
        self._recent.append(seconds / audio_seconds)
        if len(self._recent) >= _MEASURED_BLOCKS:
            self.seconds_per_audio_second = typical(self._recent)

    def rooms_held(self, most: int) -> int | None:
        """The most rooms (up to `most`) whose audio the codec makes at least as fast as it plays; None before it was
        measured."""
        cost = self.seconds_per_audio_second
        if cost is None:
            return None
        held = 0
        while held < most and (held + 1) * cost <= 1.0 + 1e-9:  # a mean of equal costs may round above them
            held += 1
        return held

    def rate_per_room(self, rooms: int) -> float | None:
        """Seconds of audio per second the codec makes for each of `rooms` rooms that share it; None before it was
        measured."""
        cost = self.seconds_per_audio_second
        if cost is None or cost <= 0 or rooms <= 0:
            return None
        return 1.0 / (rooms * cost)


def rooms_in_real_time(loop_held: int | None, codec_held: int | None) -> int | None:
    """Rooms the box holds in real time: as many as both the engine loop (a frame per frame's duration) and the codec
    (a second of audio per second) hold. None before the loop was measured; the loop's alone before the codec's."""
    if loop_held is None or codec_held is None:
        return loop_held
    return min(loop_held, codec_held)
