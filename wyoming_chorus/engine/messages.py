"""What other threads tell the engine thread: one queue of typed messages, read only at step boundaries.

The engine thread is the only owner of request state (the scheduler, the block manager, every request's sink). The
front-end thread adds, feeds, promotes and aborts requests; the owner stops the engine; the codec thread reports a
decoder failure; a test asks for an integrity check. Each of them only puts a message here, so no lock guards
request state and no thread ever sees it half-changed.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from wyoming_chorus.engine.sequence import Sequence
from wyoming_chorus.speech.api import Handle


@dataclass(frozen=True)
class Add:
    """A new request and the sink its audio goes to (None: an offline request, whose frames its caller reads)."""
    seq: Sequence
    sink: Handle | None


@dataclass(frozen=True)
class Abort:
    """The caller stopped reading (the client left, or the reply was cut off)."""
    seq_id: int


@dataclass(frozen=True)
class FeedText:
    """More of a streaming request's text track: rows [n, H], the frame cap its text now allows, and whether the
    text is complete (its last row is then tts_eos)."""
    seq_id: int
    rows: np.ndarray
    frame_cap: int
    close: bool


@dataclass(frozen=True)
class Promote:
    """Audio generated ahead of need is needed now (the listener reached this sentence)."""
    seq_id: int


@dataclass(frozen=True)
class CodecFailed:
    """The codec decoder failed on this request's frames: it ends with an error, and no frame more is made."""
    seq_id: int
    reason: str


@dataclass(frozen=True)
class CheckIntegrity:
    """Check the scheduler's and the block pool's books between two steps; `done` gets the outcome."""
    done: Future[None]


@dataclass(frozen=True)
class Stop:
    """Abort everything still running and leave the loop."""


Message = Add | Abort | FeedText | Promote | CodecFailed | CheckIntegrity | Stop
