"""Who runs each step: admission, chunked prefill, preemption by recompute, retirement. No tensors here."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from itertools import chain

import numpy as np

from .blocks import BlockManager, IntegrityError
from .pacing import Pacing
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


class Scheduler:
    def __init__(self, blocks: BlockManager, max_running: int, max_waiting: int, token_budget: int,
                 policy: Policy | str = Policy.CONTINUOUS, pacing: Pacing | None = None):
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
        self.pacing = pacing or Pacing()  # who sits a step out (engine/pacing.py); by default nobody
        self.waiting: deque[Sequence] = deque()  # arrival order; preempted requests go back to the front
        self.running: list[Sequence] = []  # the batch, in admission order: the last one is the first preempted
        self.parked: list[Sequence] = []  # hold blocks, out of the batch until their text comes; oldest first
        self.requests: dict[int, Sequence] = {}  # every live (waiting, running or parked) request by id
        self.preempted: list[Sequence] = []  # sent back to waiting by the last schedule()
        self.sat_out: list[Sequence] = []  # running requests the playback policy sat out of the last schedule()'s step

    @property
    def awaiting_text(self) -> list[Sequence]:
        """Requests holding blocks whose next frame waits for text (streaming input): parked ones, and a running
        one whose prefill has not yet reached the row it holds back."""
        return [seq for seq in chain(self.running, self.parked) if seq.awaiting_text]

    def has_work(self) -> bool:
        return bool(self.running or self.waiting or self.parked)

    def add(self, seq: Sequence) -> bool:
        """Queue a new request. False when it is refused on the spot; seq is then finished with a reason and
        message: REJECTED (the waiting queue is full) or ERROR (it could never fit in the whole pool)."""
        if seq.id in self.requests:
            raise ValueError(f"request {seq.id!r} is already queued")
        if (too_big := self._never_fits(seq)) is not None:
            seq.finish(FinishReason.ERROR, too_big)
        elif len(self.waiting) >= self.max_waiting:
            seq.finish(FinishReason.REJECTED, f"the server is busy: {len(self.waiting)} requests are already waiting")
        else:
            self.waiting.append(seq)
            self.requests[seq.id] = seq
        return not seq.is_finished

    def feed(self, seq_id: int, rows: np.ndarray, frame_cap: int, close: bool) -> Sequence | None:
        """More text rows for a streaming request, and the frame cap its text now allows (see Sequence.feed_text).
        Returns the request when that cap no longer fits the whole pool: it is then finished at once with ERROR
        and add's message (its blocks back in the pool), since it could only preempt itself for ever. A request
        that is no longer live, or whose text is complete, ignores the feed (None)."""
        seq = self.requests.get(seq_id)
        if seq is None or not seq.text_open:
            return None
        seq.feed_text(rows, close)
        seq.frame_cap = max(seq.frame_cap, frame_cap)
        if (too_big := self._never_fits(seq)) is None:
            return None
        self._retire(seq, FinishReason.ERROR, too_big)
        return seq

    def schedule(self) -> list[ScheduledEntry]:
        """Running requests go first, in admission order, except those the playback policy sits out this step (their
        listeners have audio enough: see playback_policy.py; they keep their blocks and places); each takes its next
        chunk (one row when decoding, at most the remaining token budget when prefilling, ending on a block boundary
        unless it reaches the last row: see _chunk) and the blocks to cover it. Only the newest running request can
        be mid-prefill, since a chunk the budget cuts short uses the budget up and so stops admission: every decode
        is thus scheduled before any prefill chunk, and the budget (at least max_running) covers all of them. When
        the pool is dry, the request parked longest is preempted first, then the most recently admitted running
        request (blocks freed, back to the front of waiting, recomputed from row 0 later), until the allocation fits;
        that may be the requester itself, and one prefilling ahead of its text is parked instead. A full batch also
        gives up its newest deferred request when a needed one that can run waits. Then, unless this step preempted
        (re-admitting a victim at once would only thrash), requests join the batch while the running cap and the
        remaining budget allow, each with its next chunk: needed ones before deferred ones, and within each, parked
        requests (they kept their blocks) before waiting ones in arrival order; the static policy admits only into an
        empty batch. One that does not fit the free blocks takes a parked request's blocks (preempting it), else
        stops admission (arrival order), except that a request awaiting text is passed over instead. Why parking: a
        request awaiting text runs no step, so update() takes it out of the batch once it has computed all it can; it
        keeps its blocks while the pool has room and is the first to lose them, and it takes only free places and
        blocks, never preempting, so silent streams can hold neither the batch nor the pool against requests that can
        run. Under the playback policy, requests that join are asked about too: those it would sit out for them leave
this step as well (their blocks stay), so that a new reply's prompt is not computed beside decodes that would be
cut from its next step. An entry emits a frame when its chunk reaches the request's last row."""
        self.preempted = []
        self._make_room_for_urgent()
        entries: list[ScheduledEntry] = []
        budget = self.token_budget
        sitting_out = self.pacing.skipped(self.running)
        for seq in list(self.running):
            if seq.status is not SequenceStatus.RUNNING or seq.id in sitting_out:
                continue  # preempted earlier in this loop for an older request, or its listener has audio enough
            num_new = self._chunk(seq, seq.num_computed, budget)
            while self.blocks.allocate(seq, seq.num_computed + num_new) is None:
                if seq.awaiting_text:  # prefilling ahead of its text: it takes free blocks only
                    self._park(seq)
                    break
                victim = self.parked[0] if self.parked else self.running[-1]  # never scheduled yet this step
                self._preempt(victim)
                if victim is seq:
                    break
            if seq.status is SequenceStatus.RUNNING:  # neither preempted nor parked
                entries.append(self._entry(seq, num_new))
                budget = self._budget_left(seq, seq.num_computed, num_new, budget)
        if not self.preempted and (self.policy is Policy.CONTINUOUS or not self.running):
            decodes = len(entries)
            self._admit(entries, budget)
            if len(entries) > decodes:
                late = self.pacing.skipped(self.running) - sitting_out
                entries = [e for i, e in enumerate(entries) if i >= decodes or e.seq.id not in late]
                sitting_out |= late
        self.sat_out = [seq for seq in self.running
                        if seq.id in sitting_out and seq.status is SequenceStatus.RUNNING] if sitting_out else []
        return entries

    def _admit(self, entries: list[ScheduledEntry], budget: int) -> None:
        """The admission half of schedule(): parked and waiting requests join the batch, each with an entry."""
        for seq in sorted(chain(self.parked, self.waiting), key=lambda s: s.deferred):  # a stable sort
            if len(self.running) >= self.max_running or budget == 0:
                return
            if seq in self.preempted:
                continue  # parked until it made room for an earlier one in this loop
            parked = seq.status is SequenceStatus.PARKED
            start = seq.num_computed if parked else self.blocks.reusable_rows(seq)
            num_new = self._chunk(seq, start, budget)
            if num_new == 0:
                continue  # awaiting text, with nothing to compute before the rows it holds back
            if (start + num_new) % self.blocks.block_size and start + num_new < seq.num_rows \
                    and budget < self.token_budget:
                return  # the budget left would cut a block: it starts at the next step (see _chunk)
            if not self._take_blocks(seq, start + num_new):
                if seq.awaiting_text:
                    continue  # nothing waits on its step: the requests behind it go ahead
                return  # the requests behind it wait: admission stays in arrival order
            (self.parked if parked else self.waiting).remove(seq)
            seq.status = SequenceStatus.RUNNING
            self.running.append(seq)
            entries.append(self._entry(seq, num_new))
            budget = self._budget_left(seq, start, num_new, budget)

    def _budget_left(self, seq: Sequence, start: int, num_new: int, budget: int) -> int:
        """The budget after seq's chunk: none when the budget kept it short of what seq can compute, so that only
        the newest running request is ever mid-prefill and, next step, every decode is scheduled before its chunk.
        (A chunk that stops at a block boundary before rows held back for text is followed by parking, not more.)"""
        return 0 if start + budget < self._end(seq) else budget - num_new

    def _take_blocks(self, seq: Sequence, num_rows: int) -> bool:
        """Blocks for a joining request to cover num_rows rows: a waiting one's cached prompt prefix and new ones
        (num_computed becomes the reused rows, the start its chunk was measured from), a parked one's next. When the
        pool is short, a request that can run preempts parked requests, longest parked first."""
        while True:
            if seq.status is SequenceStatus.PARKED:
                if self.blocks.allocate(seq, num_rows) is not None:
                    return True
            elif (reused := self.blocks.admit(seq, num_rows)) is not None:
                seq.num_computed = reused  # preempting a parked request keeps the prefix index: still `start`
                return True
            victim = next((p for p in self.parked if p is not seq), None)
            if victim is None or seq.awaiting_text:
                return False
            self._preempt(victim)

    def update(self, entries: list[ScheduledEntry], output: StepOutput) -> StepResult:
        """Advance every entry past the step the runner just ran; finished requests give their blocks back now, and
        one whose next row waits for text is parked."""
        result = StepResult()
        for i, entry in enumerate(entries):
            seq = entry.seq
            seq.num_computed += entry.num_new
            if seq.num_computed - entry.num_new < seq.num_prompt_rows:
                self.blocks.remember_prefix(seq)
            if entry.emits:
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
                    continue
            # Only a request awaiting text can be left with no row to compute (each frame adds the next one).
            if seq.awaiting_text and self._chunk(seq, seq.num_computed, self.token_budget) == 0:
                self._park(seq)
        return result

    def promote(self, seq_id: int) -> None:
        """Its audio is needed now: from here on it is admitted and kept like any other request."""
        if seq_id in self.requests:
            self.requests[seq_id].deferred = False

    def _chunk(self, seq: Sequence, start: int, budget: int) -> int:
        """Rows of `seq` from `start` this step can compute: up to the budget, and short of its last row while that
        row's frame would need text that has not come (the row that emits a frame needs the text row of the next
        input). A chunk that stops short of the last row ends on a block boundary, so that each full block is
        written by one chunk whatever budget the step had left: a u8 block's contents depend on how its rows were
        split into chunks (its keys are quantised per channel over the block), and a block taken from the prefix
        cache must be the one the request computes alone. Only a budget short of the block's end cuts a block
        (progress first); admission waits for a fuller step instead (_admit)."""
        end = self._end(seq)
        num_new = min(end - start, budget)
        if start + num_new < seq.num_rows:
            aligned = (start + num_new) // self.blocks.block_size * self.blocks.block_size - start
            if aligned > 0 or start + num_new == end:
                num_new = max(aligned, 0)
        return num_new

    @staticmethod
    def _end(seq: Sequence) -> int:
        """The rows `seq` could compute now: all of them, or all but the last while its frame waits for text."""
        return seq.num_rows - 1 if seq.awaiting_text else seq.num_rows

    def _never_fits(self, seq: Sequence) -> str | None:
        """Why seq could never run to its frame cap even alone in the pool, or None when it could."""
        needed = self.blocks.blocks_for(seq.max_rows)
        if needed <= self.blocks.num_blocks:
            return None
        return (f"the request needs {needed} KV cache blocks ({seq.num_prompt_rows} prompt rows + up to "
                f"{seq.frame_cap} frames) but the whole cache holds {self.blocks.num_blocks}; shorten the text or "
                f"enlarge the cache")

    def _make_room_for_urgent(self) -> None:
        """A full batch gives up its newest deferred request when a needed one that can run waits (recomputed
        later). One awaiting text cannot run, and displacing for it would only thrash."""
        if len(self.running) >= self.max_running and any(not seq.deferred and not seq.awaiting_text
                                                         for seq in chain(self.parked, self.waiting)):
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
        """The block manager's check plus: exactly the running and parked requests hold blocks, enough for their
        cached rows; the batch keeps to its cap, only its newest is mid-prefill and each has a row it can compute
        next step; a parked request has rows left; waiting requests hold none and have nothing cached."""
        self.blocks.check_integrity()
        holding = list(chain(self.running, self.parked))
        if set(self.blocks.holders) != {seq.id for seq in holding}:
            raise IntegrityError(f"block holders {sorted(self.blocks.holders)} are not the running and parked "
                                 f"requests {sorted(seq.id for seq in holding)}")
        if any(self.blocks.blocks_for(s.num_computed) > len(s.block_table) for s in holding):
            raise IntegrityError("a request has cached rows outside its blocks")
        if len(self.running) > self.max_running:
            raise IntegrityError(f"{len(self.running)} requests in a batch of at most {self.max_running}")
        if any(s.num_uncomputed > 1 for s in self.running[:-1]):
            raise IntegrityError("a running request other than the newest is mid-prefill")
        if any(s.status is not SequenceStatus.RUNNING or self._chunk(s, s.num_computed, self.token_budget) < 1
               for s in self.running):
            # Each frame appends its next input row; a request awaiting text holds back at least that row.
            raise IntegrityError("a running request has no row left it can compute (or is not marked running)")
        if any(s.num_uncomputed < 1 or s.status is not SequenceStatus.PARKED for s in self.parked):
            raise IntegrityError("a parked request has no row left, or is not marked parked")
        if any(s.num_computed or s.status is not SequenceStatus.WAITING for s in self.waiting):
            raise IntegrityError("a waiting request has cached rows or is not marked waiting")
        if len(holding) + len(self.waiting) != len(self.requests):
            raise IntegrityError("the live-request index disagrees with the queues")

    def _entry(self, seq: Sequence, num_new: int) -> ScheduledEntry:
        return ScheduledEntry(seq, seq.num_computed, num_new, seq.num_computed + num_new == seq.num_rows)

    def _park(self, seq: Sequence) -> None:
        self.running.remove(seq)
        seq.status = SequenceStatus.PARKED
        self.parked.append(seq)

    def _preempt(self, seq: Sequence) -> None:
        """Recompute, not swap: the frames stay with the request, so none is generated or delivered twice."""
        self.blocks.free(seq)
        self._queue_of(seq).remove(seq)
        seq.status = SequenceStatus.WAITING
        seq.num_computed = 0
        self.waiting.appendleft(seq)
        self.preempted.append(seq)

    def _retire(self, seq: Sequence, reason: FinishReason, error: str | None = None) -> None:
        self.blocks.free(seq)
        self._queue_of(seq).remove(seq)
        del self.requests[seq.id]
        seq.finish(reason, error)

    def _queue_of(self, seq: Sequence) -> list[Sequence] | deque[Sequence]:
        return {SequenceStatus.RUNNING: self.running, SequenceStatus.PARKED: self.parked}.get(seq.status,
                                                                                             self.waiting)
