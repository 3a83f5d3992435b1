"""What a soak records: the kinds of request its rooms send, each request's outcome, and the server sampled over
time."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

KINDS = ("oneshot", "stream", "hangup", "silent", "trickle")
WEIGHTS = (10, 6, 4, 1, 1)  # how often a room picks each kind
HOSTILE = ("silent", "trickle")  # they wait for text by design: their gaps are theirs, not stalls


@dataclass
class Outcome:
    kind: str
    started: float  # seconds since the load began
    ok: bool
    chunks: int
    longest_gap_s: float  # between two audio chunks of this reply
    error: str | None = None
    first_audio_s: float | None = None
    underrun_s: float = 0.0  # silence a listener playing at 1x from the first chunk would have heard


@dataclass
class Sample:
    t: float  # seconds since the load began
    rss_mb: float
    fds: int
    threads: int
    kv_blocks_used: float
    requests_sent: int
    requests_counted: float  # chorus_requests_total summed over statuses


@dataclass
class Load:
    began: float = field(default_factory=time.monotonic)
    sent: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
