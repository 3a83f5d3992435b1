"""The engine loop's recent periods, step end to step end: how often a room in a batch of N really gets its next frame.

What comes round is the loop's whole period, not the runner's step alone: the host's work between steps, the waits
for a first block at the codec, and the other threads on the same cores (the codec's among them) delay the next frame
as much as the runner does (on 2 Zen 4 cores, 0.6b: a 72 ms step at batch 1 came round every 89 ms in the server).
Two readers: the capacity figure (engine/step_metrics.py, chorus_realtime_rooms) and the first-chunk hold's rate
(engine/first_chunk_hold.py), so that a room's hold is planned on the speed it will be made at. Both on the engine
thread, which observes each step.
"""
from __future__ import annotations

from collections import deque

from .stats import StepReport
from .step_cost import StepCost
from .typical import typical

# The back-to-back steps the figures are read from (a few seconds of a busy engine), and how many of them a batch
# size needs before its own figure stands for it: one stall among them moves neither.
_RECENT_STEPS = 64
_MEASURED_STEPS = 5


class LoopPeriods:
    """The engine loop's recent periods, step end to step end, of decode steps that followed a busy step."""

    def __init__(self) -> None:
        self._recent: deque[tuple[int, float, float]] = deque(maxlen=_RECENT_STEPS)  # (batch, period, step seconds)
        self._last_end: float | None = None  # when the last step that ran a batch was observed

    def observe(self, report: StepReport, now: float) -> None:
        # Only a decode step (one new frame per request) measures the rooms' period: a prompt's rows cost more.
        if report.batch and not report.failed and report.frames == report.batch and self._last_end is not None:
            self._recent.append((report.batch, now - self._last_end, report.seconds))
        self._last_end = now if report.batch else None  # an idle step breaks the chain: its wait is nobody's loss

    @property
    def settled(self) -> bool:
        """Enough steps were seen for a figure that rests on what the loop did, not on the step-cost model alone."""
        return len(self._recent) >= _MEASURED_STEPS

    def period(self, batch: int, cost: StepCost) -> float | None:
        """Seconds from one step of `batch` requests to the next, as the rooms in it get their frames: measured where
        the loop ran that size lately; else the model's step scaled as the loop's periods exceed its steps at the
        nearest size it ran (typical values both: not the model's average, which a stall still weighs on)."""
        by_size: dict[int, list[tuple[float, float]]] = {}
        for size, period, seconds in self._recent:
            by_size.setdefault(size, []).append((period, seconds))
        measured = {size: seen for size, seen in by_size.items() if len(seen) >= _MEASURED_STEPS}
        if batch in measured:
            return typical(period for period, _ in measured[batch])
        predicted = cost.predict(batch)
        if predicted is None or not measured:
            return predicted
        nearest = measured[min(measured, key=lambda size: abs(size - batch))]
        step = typical(seconds for _, seconds in nearest)
        if step <= 0:
            return predicted
        return predicted * max(typical(period for period, _ in nearest) / step, 1.0)

    def rooms_in_real_time(self, cost: StepCost, frame_seconds: float, max_batch: int) -> int | None:
        """The most requests one step can hold while each still gets its frame within the frame's duration; None
        before any step was measured."""
        held = 0
        for batch in range(1, max_batch + 1):
            period = self.period(batch, cost)
            if period is None:
                return None if batch == 1 else held
            if period > frame_seconds:
                break
            held = batch
        return held
