"""A scheduler over a fake runner that checks what the block tables say is cached, and a recorder of what each
request was delivered: the scheduler tested as plain Python, with no model, as every scheduler unit test and the
random state machine run it."""
from __future__ import annotations

import numpy as np

from wyoming_chorus.engine.blocks import BlockManager
from wyoming_chorus.engine.scheduler import Scheduler, StepResult
from wyoming_chorus.engine.sequence import Sequence, StepOutput

H = 8  # the fake rows' width: any few numbers do, the model's own width is not the point


def expected_codes(seq_id: int, t: int) -> np.ndarray:
    return ((seq_id * 7919 + t * 131 + np.arange(16) * 17) % 2048).astype(np.int32)


def expected_row(seq: Sequence, t: int) -> np.ndarray:
    """The input row that follows frame t: its codes embedded (here, scaled) plus the text track."""
    return (expected_codes(seq.id, t)[:H] / 1000 + seq.text_for_frame(t)).astype(np.float32)


class FakeRunner:
    """Stands in for the native runner: it writes each new input row into a fake KV cache at the slot the block
    table names, and before emitting checks that the cached context is exactly the prompt plus the rows of the frames
    so far, so a block table that misses rows, a block shared by two requests, a stale block after preemption or a
    frame emitted from the wrong row fails the test.
    Codes are a function of (request id, frame index); eos comes at a configured frame index."""

    def __init__(self, blocks: BlockManager, eos_at: dict[int, int] | None = None):
        self.block_size = blocks.block_size
        self.cache = np.full((blocks.num_blocks, blocks.block_size, H), np.nan, np.float32)
        self.eos_at = {} if eos_at is None else eos_at  # shared: tests add entries as requests arrive

    def slot(self, seq: Sequence, row: int) -> tuple[int, int]:
        return seq.block_table[row // self.block_size], row % self.block_size

    def step(self, entries) -> StepOutput:
        codes = np.zeros((len(entries), 16), np.int32)
        is_eos = np.zeros(len(entries), bool)
        next_embeds = np.zeros((len(entries), H), np.float32)
        for i, e in enumerate(entries):
            seq = e.seq
            assert e.start == seq.num_computed
            assert len(seq.block_table) * self.block_size >= e.start + e.num_new
            for k, row in enumerate(seq.rows(e.start, e.num_new)):
                self.cache[self.slot(seq, e.start + k)] = row
            if not e.emits:
                continue
            t = len(seq.frames)
            end = e.start + e.num_new
            assert end == seq.num_prompt_rows + t  # frame t follows the prompt and one row per earlier frame
            context = np.stack([self.cache[self.slot(seq, r)] for r in range(end)])
            expected = [seq.rows(0, seq.num_prompt_rows)] + [expected_row(seq, k)[None] for k in range(t)]
            np.testing.assert_array_equal(context, np.concatenate(expected))
            if self.eos_at.get(seq.id) == t:
                is_eos[i] = True
                continue
            codes[i] = expected_codes(seq.id, t)
            next_embeds[i] = expected_row(seq, t)
        return StepOutput(codes, is_eos, next_embeds)


def make_seq(seq_id: int, prompt_rows: int, frame_cap: int) -> Sequence:
    rng = np.random.default_rng(seq_id)
    return Sequence(seq_id, rng.standard_normal((prompt_rows, H)).astype(np.float32),
                    rng.standard_normal((3, H)).astype(np.float32), np.full(H, 0.5, np.float32), frame_cap)


def make(num_blocks=64, block_size=4, max_running=4, max_waiting=8, token_budget=64, policy="continuous",
         eos_at=None):
    blocks = BlockManager(num_blocks, block_size)
    return Scheduler(blocks, max_running, max_waiting, token_budget, policy), FakeRunner(blocks, eos_at)


class Recorder:
    """Runs steps, checks integrity after each, and keeps every delivered frame per request."""

    def __init__(self, sched: Scheduler, runner: FakeRunner):
        self.sched, self.runner = sched, runner
        self.delivered: dict[int, list[np.ndarray]] = {}
        self.preempted: list[int] = []

    def step(self) -> tuple[list, StepResult]:
        entries = self.sched.schedule()
        self.preempted += [s.id for s in self.sched.preempted]
        result = self.sched.update(entries, self.runner.step(entries))
        for seq, codes in result.new_frames:
            self.delivered.setdefault(seq.id, []).append(codes)
        self.sched.check_integrity()
        return entries, result

    def run(self, max_steps=1000, until=None) -> int:
        """Steps until the scheduler has no work left, or until `until()` holds."""
        done = until or (lambda: not self.sched.has_work())
        for steps in range(1, max_steps + 1):
            self.step()
            if done():
                return steps
        raise AssertionError("the scheduler did not drain")

    def assert_frames(self, seq_id: int, count: int) -> None:
        got = self.delivered.get(seq_id, [])
        assert len(got) == count
        for t, codes in enumerate(got):
            np.testing.assert_array_equal(codes, expected_codes(seq_id, t))


def ids(entries) -> list[int]:
    return [e.seq.id for e in entries]


def text_row(seq: Sequence, k: int) -> np.ndarray:
    """Row k of a streamed request's text track: a value of its own per request and row."""
    return np.full((1, H), 0.01 * (k + 1) + seq.id, np.float32)


# A prompt start requests share (one voice): their full blocks are reused.
SHARED_PROMPT = np.random.default_rng(99).standard_normal((64, H)).astype(np.float32)
