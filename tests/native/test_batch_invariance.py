"""A request's frames do not depend on who shares its step, at the precision the engine serves compressed weights
in. In bf16 they did: on AVX-512 bf16 without AMX the plugin's batched bf16 kernels moved a 0.6b INT8 code
predictor's logits by up to 2 (on a scale of 2.8) against the same frame alone, with NaN in some rows at batch 8 and
up, and the runner gave 1 of 8 sequences the same codes batched as alone (8 of 8 in f32); lm_precision.py."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.lm_precision import activation_groups, lm_precision

from native_steps import Entry, Model, rows, run_step

FRAMES = 4
BATCH = 4


@pytest.fixture(scope="module")
def int8_model(tmp_path_factory) -> Model:
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    from wyoming_chorus.export.compress import compress_model_dir

    directory = tmp_path_factory.mktemp("int8") / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    compress_model_dir(directory, "int8")
    tables = load_file(str(directory / "embeddings.safetensors"))
    return Model(directory, json.loads((directory / "chorus.json").read_text()), tables["codec_embedding"],
                 tables["cp_codec_embedding"])


def served_runner(model: Model):
    """The native runner as the engine compiles it for these weights on this CPU (precision and activation
    groups by lm_precision's rules, the compressed products on the VNNI kernel where the CPU has it)."""
    facts = cpu_facts()
    hint = lm_precision("", "int8", "CPU", facts).hint
    groups = activation_groups("int8", "CPU", facts)
    return model.runner(kv="u8", inference=hint, num_blocks=32, activation_group=groups.group,
                        batched_group=groups.batched, batched_from=groups.batched_from, native=True)


def speak(runner, model: Model, prompts, texts, blocks):
    """Greedy frames of the given sequences, all in one step each. Returns per sequence a list of (codes, logits)."""
    H = model.hidden
    entries = [Entry(prompt, 0, block, frame=0, text_next=text[0])
               for prompt, text, block in zip(prompts, texts, blocks, strict=True)]
    frames = [[] for _ in entries]
    for _ in range(FRAMES):
        codes, _, next_embeds, logits = run_step(runner, entries, H)
        for k, entry in enumerate(entries):
            frames[k].append((codes[k].copy(), logits[k].copy()))
            entry.past += len(entry.rows)
            entry.rows = next_embeds[k:k + 1]
            entry.history = entry.history + [int(codes[k, 0])]
            entry.frame += 1
            entry.text_next = texts[k][entry.frame]
    return frames


def test_a_batch_speaks_as_each_request_alone(int8_model):
    runner = served_runner(int8_model)
    rng = np.random.default_rng(5)
    H = int8_model.hidden
    prompts = [rows(rng, 12 + 7 * i, H) for i in range(BATCH)]
    texts = [rows(rng, FRAMES + 1, H) for _ in range(BATCH)]
    batched = speak(runner, int8_model, prompts, texts, [[2 * i, 2 * i + 1] for i in range(BATCH)])
    for i in range(BATCH):
        (alone,) = speak(runner, int8_model, prompts[i:i + 1], texts[i:i + 1], [[20, 21]])
        for frame, ((codes, logits), (alone_codes, alone_logits)) in enumerate(zip(batched[i], alone, strict=True)):
            np.testing.assert_allclose(logits, alone_logits, atol=1e-4, err_msg=f"sequence {i} frame {frame}")
            np.testing.assert_array_equal(codes, alone_codes, err_msg=f"sequence {i} frame {frame}")
