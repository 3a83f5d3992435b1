"""The engine thread's metrics after each step, and its one capacity warning.

Read from what the step did (its StepReport) and the stats it published; steps taken before start (the warm-up's, a
benchmark's) count in none of them.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Collection

from wyoming_chorus.metrics import Metrics

from .playback_policy import FIRST, TIERS
from .scheduler import ScheduledEntry
from .sequence import Sequence
from .stats import EngineStats, StepReport
from .step_cost import StepCost

_LOG = logging.getLogger("wyoming_chorus.engine.core")
# How often the real-time capacity (a pass over every batch size) is worked out again: not at every step.
_CAPACITY_EVERY_SECONDS = 1.0


class StepMetrics:
    def __init__(self, metrics: Metrics, cost: StepCost, frame_seconds: float, max_batch: int):
        self.metrics = metrics
        self._cost = cost
        self._frame_seconds = frame_seconds
        self._max_batch = max_batch
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
        now = time.monotonic()
        if now - self._capacity_at < _CAPACITY_EVERY_SECONDS:
            return
        self._capacity_at = now
        held = self._cost.rooms_in_real_time(self._frame_seconds, self._max_batch)
        if held is not None:
            m.realtime_rooms.set(held)
            self._say_when_over_capacity(held, requests)

    def _say_when_over_capacity(self, held: int, requests: Collection[Sequence]) -> None:
        """Once per busy spell (until the engine is empty again): more rooms want audio than the box can hold in
        real time now, so the replies with the most audio delivered will pause."""
        rooms = len({id(seq.clock) for seq in requests if seq.clock is not None})
        if rooms > held and not self._over_capacity:
            _LOG.warning("%d rooms want audio at once and this box holds %d in real time now: the replies with the "
                         "most audio delivered may pause", rooms, held)
            self._over_capacity = True
        elif not requests:
            self._over_capacity = False


def playback_slack(entries: list[ScheduledEntry]) -> tuple[float, ...]:
    """Each entry's reply playback slack (seconds its listener has left to play), where playback has begun."""
    now = time.monotonic()
    return tuple(slack for e in entries if e.seq.clock is not None and (slack := e.seq.clock.slack(now)) is not None)
