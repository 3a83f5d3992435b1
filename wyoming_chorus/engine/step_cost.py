"""What one engine step costs on this device, by batch size, learned from the steps it runs.

The playback policy asks it whether a batch one request larger still runs in real time (one frame of audio per
step for everyone in it), and the metrics how many rooms the box can hold in real time now. The warm-up's steps give
it its first figures; every real step refines them (a moving average per batch size, since a shared machine drifts).
"""
from __future__ import annotations

import bisect

# How much one new step moves its batch size's average: recent steps count most, one odd step little.
_WEIGHT = 0.2


class StepCost:
    def __init__(self) -> None:
        self._seconds: dict[int, float] = {}  # batch size -> moving average of a step's seconds
        self._sizes: list[int] = []  # the measured batch sizes, sorted (predict runs for every step's candidates)

    def record(self, batch: int, seconds: float) -> None:
        mean = self._seconds.get(batch)
        if mean is None:
            bisect.insort(self._sizes, batch)
        self._seconds[batch] = seconds if mean is None else mean + _WEIGHT * (seconds - mean)

    def predict(self, batch: int) -> float | None:
        """Seconds of a step of `batch` requests; None before any step was measured. Between measured sizes it
        interpolates; below the smallest it takes the smallest's (a smaller batch costs no more); above the largest
        it extends the last two sizes' slope (one size alone: cost proportional to the batch, the cautious guess)."""
        known = self._sizes
        if not known:
            return None
        if batch in self._seconds:
            return self._seconds[batch]
        if batch < known[0]:
            return self._seconds[known[0]]
        at = bisect.bisect(known, batch)
        if at < len(known):
            below, above = known[at - 1], known[at]
            low, high = self._seconds[below], self._seconds[above]
            return low + (high - low) * (batch - below) / (above - below)
        if len(known) == 1:
            return self._seconds[known[0]] * batch / known[0]
        b1, b2 = known[-2], known[-1]
        slope = max((self._seconds[b2] - self._seconds[b1]) / (b2 - b1), 0.0)
        return self._seconds[b2] + slope * (batch - b2)

    def rooms_in_real_time(self, frame_seconds: float, max_batch: int) -> int | None:
        """The most requests one step can hold while each still gets its frame within the frame's own duration;
        None before any step was measured."""
        if not self._seconds:
            return None
        held = 0
        for batch in range(1, max_batch + 1):
            cost = self.predict(batch)
            if cost is None or cost > frame_seconds:
                break
            held = batch
        return held
