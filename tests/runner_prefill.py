"""One prompt prefilled through the native runner of a model directory: how the compression tests see that a
compressed directory still serves, and how close its talker logits stay to the original's."""
from __future__ import annotations

import numpy as np

from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.scheduler import ScheduledEntry
from wyoming_chorus.engine.sequence import SamplingParams, Sequence, StepOutput
from wyoming_chorus.modeldir.manifest import ModelDir


def prefill(directory, options: RunnerOptions) -> StepOutput:
    """One 20-row prompt (one block) prefilled through the native runner: codes and raw talker logits."""
    runner = PagedRunner(ModelDir(directory), options)
    hidden = runner.hidden_size
    prompt = np.random.default_rng(0).normal(0, 1, (20, hidden)).astype(np.float32)
    seq = Sequence(0, prompt, np.zeros((0, hidden), np.float32), np.zeros(hidden, np.float32), 4, SamplingParams())
    seq.block_table = [0]
    return runner.step([ScheduledEntry(seq, 0, len(prompt), True)], want_logits=True)
