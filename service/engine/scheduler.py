"""Who runs each step: admission, chunked prefill, preemption by recompute, retirement. No tensors here."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from .blocks import BlockManager, IntegrityError
from .sequence import FinishReason, Sequence, SequenceStatus, StepOutput


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
    preempted: list[Sequence] = field(default_factory=list)  # sent back to waiting by this step's schedule()


class Scheduler:
    def __init__(self, blocks: BlockManager, max_running: int, max_waiting: int, token_budget: int,
                 policy: Policy | str = Policy.CONTINUOUS):
        if max_running < 1 or max_waiting < 0:
            raise ValueError(f"need max_running >= 1 and max_waiting >= 0, got {max_running} and {max_waiting}")
        if token_budget < max_running:
            # Decodes go first at one row each; a smaller budget would starve the same requests every step.
            raise ValueError(f"token_budget ({token_budget}) must be at least max_running ({max_running})")
        self.blocks = blocks
        self.max_running = max_running
        self.max_waiting = max_waiting
        self.token_budget = token_budget
        self.policy = Policy(policy)
        self.waiting: deque[Sequence] = deque()  # arrival order; preempted requests go back to the front
        self.running: list[Sequence] = []  # admission order: the last one is the first preempted
        self.requests: dict[int, Sequence] = {}  # every live (waiting or running) request by id
        self._preempted: list[Sequence] = []

    @property
    def awaiting_text(self) -> list[Sequence]:
        """Running requests whose next frame waits for text (streaming input): they hold blocks but run no step."""
        return [seq for seq in self.running if seq.awaiting_text]

    def has_work(self) -> bool:
        return bool(self.running or self.waiting)

    def add(self, seq: Sequence) -> bool:
        """Queue a new request. False when it is refused on the spot; seq is then finished with a reason and
        message: REJECTED (the waiting queue is full) or ERROR (it could never fit in the whole pool)."""
        if seq.id in self.requests:
            raise ValueError(f"request {seq.id!r} is already queued")
        needed = self.blocks.blocks_for(seq.max_rows)
        if needed > self.blocks.num_blocks:
            seq.finish(FinishReason.ERROR, f"the request needs {needed} KV cache blocks ({seq.num_prompt_rows} prompt "
                                           f"rows + up to {seq.frame_cap} frames) but the whole cache holds "
                                           f"{self.blocks.num_blocks}; shorten the text or enlarge the cache")
        elif len(self.waiting) >= self.max_waiting:
            seq.finish(FinishReason.REJECTED, f"the server is busy: {len(self.waiting)} requests are already waiting")
        else:
            self.waiting.append(seq)
            self.requests[seq.id] = seq
        return not seq.is_finished

    def schedule(self) -> list[ScheduledEntry]:
        """Running requests go first, in admission order; each takes its next chunk (one row when decoding, at most
        the remaining token budget when prefilling) and the blocks to cover it. Only the newest running request can
        be mid-prefill, since a partial chunk always uses up the budget and so stops admission: every decode is thus
        scheduled before any prefill chunk, and the budget (at least max_running) covers all of them. When the pool
        is dry the most recently admitted running request is preempted (blocks freed, back to the front of
        waiting, recomputed from row 0 later) until the allocation fits; that may be the requester itself. A full
        batch also gives up its newest deferred request (audio generated ahead of need) when a needed one waits.
        Then, unless this step preempted (re-admitting a victim at once would only thrash), waiting requests are
        admitted in order, needed ones before deferred ones, while the running cap, the remaining budget and the free
        blocks allow, each with a first prefill chunk; the static policy admits only into an empty batch. An entry
        emits a frame when its chunk reaches the request's last row."""
        self._preempted = []
        self._make_room_for_urgent()
        entries: list[ScheduledEntry] = []
        budget = self.token_budget
        for seq in list(self.running):
            if seq.status is not SequenceStatus.RUNNING:
                continue  # preempted earlier in this loop for an older request
            num_new = self._chunk(seq, budget)
            if num_new == 0:
                continue  # awaiting text: it keeps its blocks and its place, and takes no budget
            while self.blocks.allocate(seq, seq.num_computed + num_new) is None:
                victim = self._victim(entries)
                self._preempt(victim)
                if victim is seq:
                    break
            if seq.status is SequenceStatus.RUNNING:
                entries.append(self._entry(seq, num_new))
                budget -= num_new
        if not self._preempted and (self.policy is Policy.CONTINUOUS or not self.running):
            while self.waiting and len(self.running) < self.max_running and budget > 0:
                admit = self._next_waiting()
                if admit is None:
                    break  # every waiting request awaits text
                admit.num_computed = self.blocks.reuse_prefix(admit)  # a cached prompt start is not computed again
                num_new = self._chunk(admit, budget)
                if self.blocks.allocate(admit, admit.num_computed + num_new) is None:
                    self.blocks.free(admit)
                    admit.num_computed = 0
                    break  # later arrivals wait behind it: admission stays in arrival order
                self.waiting.remove(admit)
                admit.status = SequenceStatus.RUNNING
                self.running.append(admit)
                entries.append(self._entry(admit, num_new))
                budget -= num_new
        return entries

    def update(self, entries: list[ScheduledEntry], output: StepOutput) -> StepResult:
        """Advance every entry past the step the runner just ran; finished requests give their blocks back now."""
        result = StepResult(preempted=self._preempted)
        for i, entry in enumerate(entries):
            seq = entry.seq
            seq.num_computed += entry.num_new
            if seq.num_computed - entry.num_new < seq.num_prompt_rows:
                self.blocks.remember_prefix(seq)
            if not entry.emits:
                continue
            if output.is_eos[i]:
                self._retire(seq, FinishReason.EOS)
                result.finished.append(seq)
                continue
            codes = output.codes[i].astype(np.int32)  # a copy: the runner reuses its output buffers
            seq.append_frame(codes, output.next_embeds[i])
            result.new_frames.append((seq, codes))
            if len(seq.frames) >= seq.frame_cap:
                self._retire(seq, FinishReason.FRAME_CAP)
                result.finished.append(seq)
        return result

    def promote(self, seq_id: int) -> None:
        """Its audio is needed now: from here on it is admitted and kept like any other request."""
        if seq_id in self.requests:
            self.requests[seq_id].deferred = False

    def _next_waiting(self) -> Sequence | None:
        """The oldest waiting request that is needed now, else the oldest deferred one; of those that can compute
        a row (a preempted request awaiting text, with one row left, cannot)."""
        first_ready = None
        for seq in self.waiting:
            if self._chunk(seq, 1):
                if not seq.deferred:
                    return seq
                first_ready = first_ready or seq
        return first_ready

    @staticmethod
    def _chunk(seq: Sequence, budget: int) -> int:
        """Rows of `seq` this step can compute: up to the budget, and short of its last row while that row's frame
        would need text that has not come (the row that emits a frame needs the text row of the next input)."""
        num_new = min(seq.num_uncomputed, budget)
        if seq.awaiting_text and num_new == seq.num_uncomputed:
            num_new -= 1
        return num_new

    def _victim(self, entries: list[ScheduledEntry]) -> Sequence:
        """Whom to preempt when blocks run out: the newest request awaiting text that has no entry this step (it
        runs no step now, and its text may be long in coming), else the newest running request (never scheduled
        yet this step: running requests are scheduled oldest first)."""
        scheduled = {entry.seq.id for entry in entries}
        return next((seq for seq in reversed(self.running) if seq.awaiting_text and seq.id not in scheduled),
                    self.running[-1])

    def _make_room_for_urgent(self) -> None:
        """A full batch gives up its newest deferred request when a needed one waits (recomputed later)."""
        if len(self.running) >= self.max_running and any(not seq.deferred for seq in self.waiting):
            victim = next((seq for seq in reversed(self.running) if seq.deferred), None)
            if victim is not None:
                self._preempt(victim)

    def finish_requests(self, ids: Iterable[int], reason: FinishReason, error: str | None = None) -> list[Sequence]:
        """The one abort path (call it between steps): finishes the live requests among ids and frees their blocks.
        Ids already finished are skipped: an abort can race with the request's own end."""
        finished = []
        for seq_id in ids:
            if seq_id in self.requests:
                seq = self.requests[seq_id]
                self._retire(seq, reason, error)
                finished.append(seq)
        return finished

    def check_integrity(self) -> None:
        """The block manager's check plus: exactly the running requests hold blocks, enough for their cached rows,
        and only the newest is mid-prefill; waiting requests hold none and have nothing cached."""
        self.blocks.check_integrity()
        if set(self.blocks.holders) != {seq.id for seq in self.running}:
            raise IntegrityError(f"block holders {sorted(self.blocks.holders)} are not the running requests "
                                 f"{sorted(seq.id for seq in self.running)}")
        if any(self.blocks.blocks_for(s.num_computed) > len(s.block_table) for s in self.running):
            raise IntegrityError("a running request has cached rows outside its blocks")
        if any(s.num_uncomputed > 1 for s in self.running[:-1]):
            raise IntegrityError("a running request other than the newest is mid-prefill")
        if any(s.num_uncomputed < 1 for s in self.running):
            # Each frame appends its next input row; a request awaiting text holds back exactly that row.
            raise IntegrityError("a running request has no row left to compute")
        if any(s.num_computed or s.status is not SequenceStatus.WAITING for s in self.waiting):
            raise IntegrityError("a waiting request has cached rows or is not marked waiting")
        if len(self.running) + len(self.waiting) != len(self.requests):
            raise IntegrityError("the live-request index disagrees with the queues")

    def _entry(self, seq: Sequence, num_new: int) -> ScheduledEntry:
        return ScheduledEntry(seq, seq.num_computed, num_new, seq.num_computed + num_new == seq.num_rows)

    def _preempt(self, seq: Sequence) -> None:
        """Recompute, not swap: the frames stay with the request, so none is generated or delivered twice."""
        self.blocks.free(seq)
        self.running.remove(seq)
        seq.status = SequenceStatus.WAITING
        seq.num_computed = 0
        self.waiting.appendleft(seq)
        self._preempted.append(seq)

    def _retire(self, seq: Sequence, reason: FinishReason, error: str | None = None) -> None:
        self.blocks.free(seq)
        (self.running if seq.status is SequenceStatus.RUNNING else self.waiting).remove(seq)
        del self.requests[seq.id]
        seq.finish(reason, error)
