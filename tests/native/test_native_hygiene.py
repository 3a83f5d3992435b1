"""The native runner keeps per-step scratch (Runner, CodePredictor) and takes the caller's arrays off its infer
request after each step: neither may carry anything from one step into the next. A runner that has run steps of
other sizes, with their input arrays freed since, must give what a fresh runner gives for the same step."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from native_steps import Entry, Model, rows, run_step, tiny_model


@pytest.fixture(scope="module")
def model() -> Model:
    return tiny_model()


# Each step: one entry per flag, emitting or not. The code predictor's batch (the emitting entries) grows, shrinks,
# vanishes and comes back, so every scratch buffer and cached view is both reused and resized.
STEPS = [[True, True, True], [False, True], [False, False], [True, False, True, True], [True]]


def step_entries(rng, model: Model, emits: list[bool], block_size: int, seed: int) -> list[Entry]:
    # Every entry a fresh prompt (past 0) in a block of its own: the step reads nothing an earlier one wrote.
    return [Entry(rows(rng, 1 + (5 * s) % block_size, model.hidden), 0, [s], emit=emit, frame=3, seed=seed + s,
                  temperature=0.9 if s % 2 else 0.0, text_next=rows(rng, 1, model.hidden)[0])
            for s, emit in enumerate(emits)]


def test_steps_do_not_leak_into_later_ones(model, shared_runner):
    reused = shared_runner(model)  # the session's f32 runner: it has run test_native_runner.py's steps too
    rng = np.random.default_rng(11)
    steps = [step_entries(rng, model, emits, reused.block_size, seed=100 * k) for k, emits in enumerate(STEPS)]
    outputs = []
    for entries in steps:
        # Copies, dropped as soon as the step returns: their buffers are freed before the next step runs.
        copied = [Entry(e.rows.copy(), e.past, list(e.blocks), emit=e.emit, frame=e.frame, seed=e.seed,
                        temperature=e.temperature, text_next=e.text_next.copy()) for e in entries]
        outputs.append(run_step(reused, copied, model.hidden))
        del copied
        gc.collect()

    for k, entries in enumerate(steps):
        fresh = run_step(model.runner(), entries, model.hidden)
        codes, is_eos, next_embeds, logits = outputs[k]
        np.testing.assert_array_equal(codes, fresh[0], err_msg=f"step {k}")
        np.testing.assert_array_equal(is_eos, fresh[1], err_msg=f"step {k}")
        np.testing.assert_allclose(next_embeds, fresh[2], atol=1e-5, err_msg=f"step {k}")
        np.testing.assert_allclose(logits, fresh[3], atol=1e-5, err_msg=f"step {k}")
        # Entries that do not emit get no codes and no next embedding.
        silent = ~np.array(STEPS[k])
        assert not codes[silent].any() and not next_embeds[silent].any()
