"""What one schedule() decides: the scheduler's policy, each request's chunk of the step, and what the step made."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from .sequence import Sequence


class Policy(Enum):
    CONTINUOUS = "continuous"  # a request joins the running batch at the next step
    STATIC = "static"  # a batch is admitted only once the previous one has drained (benchmark baseline)


@dataclass(frozen=True)
class ScheduledEntry:
    seq: Sequence
    start: int  # first new row; equals seq.num_computed when scheduled
    num_new: int
    emits: bool  # the chunk ends at the request's last row, so this step produces its next frame


@dataclass
class StepResult:
    new_frames: list[tuple[Sequence, np.ndarray]] = field(default_factory=list)  # (seq, int32 [16])
    finished: list[Sequence] = field(default_factory=list)  # blocks already back in the pool
