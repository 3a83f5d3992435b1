"""The engine thread's metrics after each step, and its one capacity warning.

Read from what the step did (its StepReport) and the stats it published; steps taken before start (the warm-up's, a
benchmark's) count in none of them.

The capacity ("this box holds N rooms in real time now", chorus_realtime_rooms) is what the rooms hear. A room needs two
things at once: the engine loop must give it a frame per frame's duration, and the codec thread must turn its frames
into audio at least as fast as they play (engine/codec_load.py); the box holds the rooms both hold. The loop's part: a
room gets one frame per step it runs in, so it is in real time while a step comes round within one frame's duration.
What comes round is the engine loop's whole period from one step to the next, not the step's own seconds: the host's
work between steps, the waits for a first block at the codec, and the other threads on the same cores (the codec's among
them) all delay the next frame as much as the runner does. And it is the typical period (engine/typical.py: the mean
without the slowest twentieth), not the last one: one stalled step (another process took the cores) does not make a room
fall behind, while steps slow every now and then do. Batch sizes the loop has run lately are taken as measured; others
from the step-cost model, scaled as the loop's periods exceed its steps where it ran (engine/loop_periods.py). The
warning waits for a few measured periods: a first guess from the warm-up alone is not what the rooms hear. It counts a
room as wanting audio while the engine makes its frames or the codec still owes it audio: with a fast loop and a slow
codec the frames are all made long before the room has heard them.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection

from wyoming_chorus.metrics import Metrics

from .codec_load import CodecLoad, rooms_in_real_time
from .loop_periods import LoopPeriods
from .playback_policy import FIRST, TIERS
from .scheduler import ScheduledEntry
from .sequence import Sequence
from .stats import EngineStats, StepReport
from .step_cost import StepCost

_LOG = logging.getLogger("wyoming_chorus.engine.core")
# How often the real-time capacity (a pass over every batch size) is worked out again: not at every step.
_CAPACITY_EVERY_SECONDS = 1.0


class StepMetrics:
    def __init__(self, metrics: Metrics, cost: StepCost, frame_seconds: float, max_batch: int,
                 codec: CodecLoad | None = None, clock: Callable[[], float] = time.monotonic,
                 periods: LoopPeriods | None = None):
        """`codec`: what the codec thread measures of itself (None: the loop's capacity alone). `periods`: where the
        loop's periods are kept (the first-chunk hold reads them too), observed here after each step."""
        self.metrics = metrics
        self._cost = cost
        self._frame_seconds = frame_seconds
        self._max_batch = max_batch
        self._clock = clock
        self._periods = periods or LoopPeriods()
        self._codec = codec or CodecLoad()
        self._rows_reused_counted = 0
        self._over_capacity = False  # whether the log has said that more rooms want audio than the box holds
        self._capacity_at = float("-inf")  # when the capacity was last worked out
        for tier in TIERS:
            if tier != FIRST:  # every tier a request can sit out in is exported from the start, at 0
                metrics.playback_sat_out.labels(tier)

    def observe(self, report: StepReport, stats: EngineStats, requests: Collection[Sequence]) -> None:
        """`requests`: every live request after the step."""
        m = self.metrics
        m.preemptions_total.inc(report.preempted)
        if report.batch and not report.failed:
            m.batch_size.observe(report.batch)
            m.step_seconds.observe(report.seconds)
            m.frames_total.inc(report.frames)
            for slack in report.slack:
                m.playback_slack.observe(slack)
            for tier in report.sat_out:
                m.playback_sat_out.labels(tier).inc()
        m.kv_blocks_used.set(stats.blocks_used)
        m.requests_running.set(stats.running)
        m.requests_awaiting_text.set(stats.awaiting_text)
        m.kv_blocks_cached.set(stats.blocks_cached)
        if stats.rows_reused > self._rows_reused_counted:
            m.prefix_rows_reused_total.inc(stats.rows_reused - self._rows_reused_counted)
            self._rows_reused_counted = stats.rows_reused
        m.requests_waiting.set(stats.waiting)
        now = self._clock()
        self._periods.observe(report, now)
        if now - self._capacity_at < _CAPACITY_EVERY_SECONDS:
            return
        self._capacity_at = now
        if (codec_cost := self._codec.seconds_per_audio_second) is not None:
            m.codec_seconds_per_audio_second.set(codec_cost)
        held = self.rooms_in_real_time()
        if held is not None:
            m.realtime_rooms.set(held)
            if self._periods.settled:
                self._say_when_over_capacity(held, requests)

    def rooms_in_real_time(self) -> int | None:
        """How many rooms this box holds in real time now (chorus_realtime_rooms); None before any step."""
        return rooms_in_real_time(self._periods.rooms_in_real_time(self._cost, self._frame_seconds, self._max_batch),
                                  self._codec.rooms_held(self._max_batch))

    def _say_when_over_capacity(self, held: int, requests: Collection[Sequence]) -> None:
        """Once per busy spell (until no room wants audio again): more rooms want audio than the box can hold in
        real time now, so the replies with the most audio delivered will pause."""
        rooms = len({id(seq.clock) for seq in requests if seq.clock is not None} | self._codec.rooms)
        if rooms > held and not self._over_capacity:
            _LOG.warning("%d rooms want audio at once and this box holds %d in real time now: the replies with the "
                         "most audio delivered may pause", rooms, held)
            self._over_capacity = True
        elif not requests and not self._codec.rooms:
            self._over_capacity = False


def playback_slack(entries: list[ScheduledEntry]) -> tuple[float, ...]:
    """Each entry's reply playback slack (seconds its listener has left to play), where playback has begun."""
    now = time.monotonic()
    return tuple(slack for e in entries if e.seq.clock is not None and (slack := e.seq.clock.slack(now)) is not None)
