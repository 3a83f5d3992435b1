"""What one engine step costs on this device, by batch size, learned from the steps it runs.

The playback policy asks it whether a batch one request larger still runs in real time (one frame of audio per
step for everyone in it), and the metrics how many rooms the box can hold in real time now. The warm-up's steps give
it its first figures, one per size of `probe_batches`; every real step refines them (a moving average per batch size,
since a shared machine drifts). Only decode steps count (one row per request): a step that also takes in a prompt
costs more, and would teach the policy that a batch size is dearer than it is.
"""
from __future__ import annotations

import bisect

# How much one new step moves its batch size's average: recent steps count most, one odd step little.
_WEIGHT = 0.2
# A batch size's first steps can carry one-off costs (the plugin prepares kernels for a new shape): until this many
# were seen, its figure is the fastest of them, a steady step's cost, rather than an average an outlier dominates.
_FIRST_STEPS = 3


def probe_batches(max_batch: int) -> list[int]:
    """The batch sizes the warm-up measures after its single request: powers of two, and max_batch itself."""
    sizes = [size for size in (2, 4, 8, 16, 32, 64) if size < max_batch]
    return sizes + [max_batch] if max_batch > 1 else []


class StepCost:
    def __init__(self) -> None:
        self._seconds: dict[int, float] = {}  # batch size -> moving average of a step's seconds
        self._sizes: list[int] = []  # the measured batch sizes, sorted (predict runs for every step's candidates)
        self._seen: dict[int, int] = {}  # batch size -> steps recorded

    def record(self, batch: int, seconds: float) -> None:
        mean = self._seconds.get(batch)
        seen = self._seen.get(batch, 0)
        self._seen[batch] = seen + 1
        if mean is None:
            bisect.insort(self._sizes, batch)
            self._seconds[batch] = seconds
        elif seen < _FIRST_STEPS:
            self._seconds[batch] = min(mean, seconds)
        else:
            self._seconds[batch] = mean + _WEIGHT * (seconds - mean)

    @property
    def sizes(self) -> tuple[int, ...]:
        """The batch sizes measured so far, ascending."""
        return tuple(self._sizes)

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
