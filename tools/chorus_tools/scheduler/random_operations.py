"""Random arrivals, aborts, feeds, promotions and steps on a random tiny pool (hypothesis' stateful testing): the
scheduler's invariants after every operation. tests/engine/test_scheduler.py runs it with one fixed seed,
tools/explore_scheduler.py with fresh ones for a time budget."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from chorus_tools.scheduler.fake_runner import SHARED_PROMPT, H, Recorder, ids, make, make_seq, text_row
from wyoming_chorus.engine.scheduler import Policy
from wyoming_chorus.engine.sequence import FinishReason, Sequence, SequenceStatus


class RandomOperations(RuleBasedStateMachine):
    """Random arrivals, aborts, feeds and steps on a random tiny pool: the integrity check holds after every
    operation; streams that never get more text hold nothing up (every other request runs to its end while they
    wait); a feed that outgrows the pool ends its request at once; and every request's delivered frames are exactly
    the unpreempted run's, each once, up to how it finished."""

    @initialize(num_blocks=st.integers(3, 12), block_size=st.sampled_from([1, 2, 4, 8]),
                max_running=st.integers(1, 5), extra_budget=st.integers(0, 12), max_waiting=st.integers(1, 6),
                policy=st.sampled_from(list(Policy)))
    def setup(self, num_blocks, block_size, max_running, extra_budget, max_waiting, policy):
        self.eos_at: dict[int, int] = {}
        sched, runner = make(num_blocks, block_size, max_running, max_waiting, max_running + extra_budget, policy,
                             self.eos_at)
        self.rec = Recorder(sched, runner)
        self.sched = sched
        self.seqs: dict[int, Sequence] = {}
        self.silent: set[int] = set()  # streams whose text stops coming: never fed
        self.outgrown: set[int] = set()  # ended by a feed whose frame cap the whole pool could not hold
        self.most = num_blocks * block_size * 3 // 4 + 1  # prompts and caps up to this: mostly fit, sometimes not

    @rule(data=st.data())
    def arrive(self, data):
        seq_id = len(self.seqs)
        seq = make_seq(seq_id, data.draw(st.integers(1, self.most)), data.draw(st.integers(1, self.most)))
        if data.draw(st.booleans()):  # the same prompt start as others (one voice): full blocks are shared
            seq = Sequence(seq_id, SHARED_PROMPT[:seq.num_prompt_rows], seq.trailing_text, seq.pad_text,
                           seq.frame_cap)
        seq.deferred = data.draw(st.booleans())
        if data.draw(st.booleans()):  # a streamed text: some of its rows have come, more may
            seq.trailing_text = seq.trailing_text[:data.draw(st.integers(0, 3))]
            seq.text_open = True
            if data.draw(st.booleans()):
                self.silent.add(seq_id)
        eos = data.draw(st.none() | st.integers(0, self.most))
        if eos is not None:
            self.eos_at[seq_id] = eos
        queue_full = len(self.sched.waiting) >= self.sched.max_waiting
        too_big = self.sched.blocks.blocks_for(seq.max_rows) > self.sched.blocks.num_blocks
        self.seqs[seq_id] = seq
        assert self.sched.add(seq) == (not too_big and not queue_full)
        if too_big:
            assert seq.finish_reason is FinishReason.ERROR
        elif queue_full:
            assert seq.finish_reason is FinishReason.REJECTED

    @precondition(lambda self: self.seqs)
    @rule(data=st.data())
    def abort(self, data):
        self.sched.finish_requests([data.draw(st.sampled_from(sorted(self.seqs)))], FinishReason.ABORTED)

    def fed(self) -> list[Sequence]:
        return [s for s in self.seqs.values() if s.text_open and not s.is_finished and s.id not in self.silent]

    @precondition(lambda self: self.fed())
    @rule(data=st.data())
    def feed(self, data):
        seq = data.draw(st.sampled_from(self.fed()))
        rows = np.concatenate([text_row(seq, len(seq.trailing_text) + k) for k in range(data.draw(st.integers(0, 2)))]
                              or [np.zeros((0, H), np.float32)])
        cap = seq.frame_cap + data.draw(st.integers(0, self.most))  # the text so far allows more frames
        outgrows = self.sched.blocks.blocks_for(seq.num_prompt_rows + cap - 1) > self.sched.blocks.num_blocks
        ended = self.sched.feed(seq.id, rows, cap, close=data.draw(st.booleans()))
        assert (ended is seq) == outgrows
        if outgrows:
            assert seq.finish_reason is FinishReason.ERROR and seq.block_table == []
            self.outgrown.add(seq.id)

    @precondition(lambda self: self.seqs)
    @rule(data=st.data())
    def promote(self, data):
        self.sched.promote(data.draw(st.sampled_from(sorted(self.seqs))))

    @rule()
    def step(self):
        entries, _ = self.rec.step()
        assert len(entries) <= self.sched.max_running
        assert sum(e.num_new for e in entries) <= self.sched.token_budget
        assert len(set(ids(entries))) == len(entries)
        block = self.sched.blocks.block_size
        if self.sched.token_budget - (self.sched.max_running - 1) >= block:  # a prefill chunk can always end a block
            # so every full block is written by one chunk, however the budget was shared (Scheduler.chunk)
            assert all((e.start + e.num_new) % block == 0 for e in entries if not e.emits)

    @invariant()
    def integrity(self):
        self.sched.check_integrity()

    def teardown(self):
        for seq in self.fed():
            self.sched.feed(seq.id, np.zeros((0, H), np.float32), seq.frame_cap, close=True)
        # Every request but the silent streams runs to its end while those wait for text that never comes ...
        self.rec.run(until=lambda: all(s.id in self.silent and s.awaiting_text for s in self.sched.requests.values()))
        self.sched.finish_requests(list(self.silent), FinishReason.ABORTED)  # ... until the server times them out
        assert not self.sched.has_work() and self.sched.blocks.num_free == self.sched.blocks.num_blocks
        for seq_id, seq in self.seqs.items():
            assert seq.status is SequenceStatus.FINISHED
            delivered = len(self.rec.delivered.get(seq_id, []))
            self.rec.assert_frames(seq_id, delivered)  # never repeated, never skipped, same as unpreempted
            assert len(seq.frames) == delivered
            if seq.finish_reason is FinishReason.EOS:
                assert delivered == self.eos_at[seq_id]
            elif seq.finish_reason is FinishReason.FRAME_CAP:
                assert delivered == seq.frame_cap
            elif seq.finish_reason is not FinishReason.ABORTED and seq_id not in self.outgrown:
                assert delivered == 0
