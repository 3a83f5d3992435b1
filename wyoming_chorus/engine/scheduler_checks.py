"""The scheduler's books, checked: by the engine between two steps when it has nothing to run, and on request
(EngineCore.check_integrity). A disagreement raises IntegrityError instead of leaking a block or starving a request."""
from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING

from .blocks import IntegrityError
from .sequence import SequenceStatus

if TYPE_CHECKING:
    from .scheduler import Scheduler


def check_scheduler(s: Scheduler) -> None:
    """The block manager's check plus: exactly the running and parked requests hold blocks, enough for their cached
    rows; the batch keeps to its cap, only its newest is mid-prefill and each has a row it can compute next step; a
    parked request has rows left; waiting requests hold none and have nothing cached."""
    s.blocks.check_integrity()
    holding = list(chain(s.running, s.parked))
    if set(s.blocks.holders) != {seq.id for seq in holding}:
        raise IntegrityError(f"block holders {sorted(s.blocks.holders)} are not the running and parked "
                             f"requests {sorted(seq.id for seq in holding)}")
    if any(s.blocks.blocks_for(seq.num_computed) > len(seq.block_table) for seq in holding):
        raise IntegrityError("a request has cached rows outside its blocks")
    if len(s.running) > s.max_running:
        raise IntegrityError(f"{len(s.running)} requests in a batch of at most {s.max_running}")
    if any(seq.num_uncomputed > 1 for seq in s.running[:-1]):
        raise IntegrityError("a running request other than the newest is mid-prefill")
    if any(seq.status is not SequenceStatus.RUNNING or s.chunk(seq, seq.num_computed, s.token_budget) < 1
           for seq in s.running):
        # Each frame appends its next input row; a request awaiting text holds back at least that row.
        raise IntegrityError("a running request has no row left it can compute (or is not marked running)")
    if any(seq.num_uncomputed < 1 or seq.status is not SequenceStatus.PARKED for seq in s.parked):
        raise IntegrityError("a parked request has no row left, or is not marked parked")
    if any(seq.num_computed or seq.status is not SequenceStatus.WAITING for seq in s.waiting):
        raise IntegrityError("a waiting request has cached rows or is not marked waiting")
    if len(holding) + len(s.waiting) != len(s.requests):
        raise IntegrityError("the live-request index disagrees with the queues")
