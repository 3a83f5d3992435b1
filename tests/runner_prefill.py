"""What the compression tests look at in a model directory: one prompt prefilled through its native runner (that a
compressed directory still serves, and how close its talker logits stay to the original's), and the element types
its graphs' weights are stored in (what the compression really wrote)."""
from __future__ import annotations

import numpy as np
import openvino as ov

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


def weight_types(xml) -> set[str]:
    """Element types of the graph's constants that hold weights (more than a few values)."""
    model = ov.Core().read_model(xml)
    return {op.get_output_element_type(0).get_type_name() for op in model.get_ops()
            if op.get_type_name() == "Constant" and int(np.prod(list(op.get_output_shape(0)))) > 64}
