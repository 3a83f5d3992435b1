"""The native paged runner (wyoming_chorus._native.Runner) on the built-in tiny model, against the stateful talker.xml
and code_predictor.xml it is built from, compiled by OpenVINO's Python API at f32 (inference and KV cache)."""
from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import openvino as ov
import pytest
from openvino._offline_transformations import paged_attention_transformation

from wyoming_chorus import _native
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.step_batch import StepBatch

from native_steps import Entry, Model, rows, run_step, step_batch, tiny_model

F32 = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
CPU = cpu_facts()


@pytest.fixture(scope="module")
def model() -> Model:
    return tiny_model()


@pytest.fixture
def f32_runner(model, shared_runner) -> _native.Runner:
    return shared_runner(model)  # test_native_hygiene.py's reused runner too


class StatefulReference:
    """talker.xml and code_predictor.xml as exported (stateful SDPA), f32 throughout: what the runner must match."""

    def __init__(self, model: Model, properties: dict | None = None):
        core = ov.Core()
        self.model = model
        config = {**F32, **(properties or {})}
        self.talker = core.compile_model(model.dir / "talker.xml", "CPU", config).create_infer_request()
        self.predictor = core.compile_model(model.dir / "code_predictor.xml", "CPU", config).create_infer_request()
        self.length = 0

    def talk(self, rows: np.ndarray):
        """Feeds new rows; returns (logits, hidden) of the last one."""
        n = len(rows)
        self.talker.infer({
            "inputs_embeds": rows[None].astype(np.float32),
            "attention_mask": np.ones((1, self.length + n), np.int64),
            "position_ids": np.arange(self.length, self.length + n, dtype=np.int64)[None],
            "beam_idx": np.zeros(1, np.int32),
        })
        self.length += n
        return (self.talker.get_tensor("logits").data[0, -1].copy(),
                self.talker.get_tensor("hidden").data[0, -1].copy())

    def greedy_c0(self, logits, history, penalty, frame, min_new_tokens=2):
        scores = logits.astype(np.float32).copy()
        seen = np.unique(np.asarray(history, np.int64))
        scores[seen] = np.where(scores[seen] < 0, scores[seen] * penalty, scores[seen] / penalty)
        eos = self.model.eos
        keep_eos = scores[eos]
        scores[self.model.suppress_from:] = -np.inf
        scores[eos] = keep_eos if frame >= min_new_tokens else -np.inf
        return int(np.argmax(scores))

    def greedy_frame(self, hidden, c0):
        """Greedy codebooks 1..15 and sum_j E_j(c_{j+1}) for one frame."""
        C, E = self.model.codec, self.model.cp_codec
        self.predictor.reset_state()
        x = np.stack([hidden, C[c0]])[None]
        codes, total = [], np.zeros(self.model.hidden, np.float32)
        for j in range(E.shape[0]):
            self.predictor.infer({"inputs_embeds": x.astype(np.float32), "head_index": np.array(j, np.int64)})
            code = int(np.argmax(self.predictor.get_tensor("logits").data[0]))
            codes.append(code)
            total += E[j, code]
            x = E[j, code][None, None]
        return codes, total


def codebook0_distribution(logits, model: Model):
    scores = logits.astype(np.float64).copy()
    allowed = np.zeros(len(scores), bool)
    allowed[:model.suppress_from] = True
    allowed[model.eos] = True
    scores = scores[allowed]
    p = np.exp(scores - scores.max())
    return p / p.sum()


def kl(p, q):
    return float(np.sum(p * (np.log(p + 1e-30) - np.log(q + 1e-30))))


# ---------------------------------------------------------------------------------------------------------------
# (a) paged runner == stateful talker at f32; u8 figures


PROMPT, DECODES = 40, 30            # the prompt spans a block boundary, the decodes a second one
BLOCKS = [5, 2, 7]                  # scattered on purpose


def greedy_trajectory(runner, model, rng):
    """Prefill + DECODES greedy decode steps; returns the inputs fed, the logits and outputs of every step."""
    text = rows(rng, DECODES + 1, model.hidden)
    inputs, logits, outputs = [rows(rng, PROMPT, model.hidden)], [], []
    history, past = [], 0
    for frame in range(DECODES + 1):
        entry = Entry(inputs[-1], past, BLOCKS, frame=frame, history=list(history), text_next=text[frame])
        codes, is_eos, next_embeds, frame_logits = run_step(runner, [entry], model.hidden)
        outputs.append((codes[0], next_embeds[0], text[frame]))
        logits.append(frame_logits[0])
        assert not is_eos[0]  # random weights: eos never wins here (and the trajectory would stop)
        history.append(int(codes[0, 0]))
        past += len(inputs[-1])
        inputs.append(next_embeds)
    return inputs[:-1], logits, outputs


def assert_matches_stateful_reference(runner, model, properties: dict | None = None):
    """The runner's greedy trajectory, codebook 0 and the code predictor's 15 codebooks, equals the exported graphs'
    own (the predictor with its head_index input, i.e. unsplit)."""
    inputs, logits, outputs = greedy_trajectory(runner, model, np.random.default_rng(1))
    reference = StatefulReference(model, properties)
    history = []
    worst = 0.0
    for frame, (x, paged_logits, (codes, next_embeds, text)) in enumerate(zip(inputs, logits, outputs, strict=True)):
        ref_logits, ref_hidden = reference.talk(x)
        worst = max(worst, float(np.abs(paged_logits - ref_logits).max()))
        c0 = reference.greedy_c0(ref_logits, history, 1.05, frame)
        sub_codes, sub_sum = reference.greedy_frame(ref_hidden, c0)
        np.testing.assert_array_equal(codes, [c0] + sub_codes, err_msg=f"frame {frame}")
        np.testing.assert_allclose(next_embeds, model.codec[c0] + sub_sum + text, atol=1e-4)
        history.append(c0)
    print(f"\npaged f32/f32 vs stateful f32: max |logit diff| = {worst:.2e} over {len(inputs)} steps")
    assert worst < 1e-4


def test_paged_f32_matches_stateful_talker(model, f32_runner):
    # Exact code equality is safe here: the greedy margins of this seed are > 2e-3, the f32 differences ~1e-7.
    assert f32_runner.predictor_heads_split  # so the heads run as models of their own, and are checked here
    assert_matches_stateful_reference(f32_runner, model)


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_split_heads_of_compressed_weights_match_the_gathered_head(model, mode, tmp_path):
    """Compressed heads are sliced out of their stacked constants (values, zero points, scales) at load: a slice of
    the wrong head or of misaligned bytes would change the codes, which the exported graph computes unsplit."""
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    from wyoming_chorus.export.compress import compress_model_dir

    directory = tmp_path / "tiny"
    shutil.copytree(model.dir, directory)
    compress_model_dir(directory, mode, group_size=16)  # a group that fits the tiny model's widths
    compressed = Model(directory, model.manifest, model.codec, model.cp_codec)
    runner = compressed.runner()
    assert runner.predictor_heads_split
    assert_matches_stateful_reference(runner, compressed)


def test_activation_group_reaches_the_plugin(model, f32_runner):
    """The group asked for is the one the talker is compiled with; none asked for leaves the plugin's default."""
    assert model.runner(activation_group=64).dynamic_quantization_group_size == 64
    assert model.runner(activation_group=0).dynamic_quantization_group_size == 0
    assert f32_runner.dynamic_quantization_group_size not in (0, 64)  # the plugin's default (32 in 2026.4)


@pytest.mark.parametrize(("mode", "group", "batched"), [("int8", 0, False), ("int8", 256, False),
                                                        ("int4", 0, True)])
def test_compressed_weights_with_an_activation_group_still_match(model, mode, group, batched, tmp_path):
    """Compressed weights with activations quantised in groups (or not at all), in the body every batch runs or in
    the code predictor's second body for large batches (here from batch 1, so that it runs): the codes still follow
    the stateful graphs the plugin compiles with the same group (a group that reached only one side, or a second
    body that ran with the first's ports or without its heads, would change them or fail)."""
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    from wyoming_chorus.export.compress import compress_model_dir

    directory = tmp_path / "tiny"
    shutil.copytree(model.dir, directory)
    compress_model_dir(directory, mode, group_size=16)  # a group that fits the tiny model's widths
    compressed = Model(directory, model.manifest, model.codec, model.cp_codec)
    batched_body = {"batched_group": group, "batched_from": 1} if batched else {}
    runner = compressed.runner(activation_group=group, **batched_body)
    assert runner.dynamic_quantization_group_size == group and runner.predictor_heads_split
    properties = {"DYNAMIC_QUANTIZATION_GROUP_SIZE": group}
    assert_matches_stateful_reference(runner, compressed, properties)


@pytest.mark.parametrize("inference", ["f32", ""])
def test_u8_cache_figures(model, f32_runner, inference):
    """u8 KV against the f32 reference on identical inputs: reports max |logit diff| and mean KL of codebook 0."""
    inputs, _, _ = greedy_trajectory(f32_runner, model, np.random.default_rng(1))
    runner = model.runner(kv="u8", inference=inference)
    assert runner.kv_precision == "u8"
    reference = StatefulReference(model)
    diffs, kls, past = [], [], 0
    for frame, x in enumerate(inputs):
        # Logits only: the inputs are fixed, so sampling choices do not matter here.
        _, _, _, paged = run_step(runner, [Entry(x, past, BLOCKS, emit=False, frame=frame)], model.hidden)
        ref, _ = reference.talk(x)
        diffs.append(float(np.abs(paged[0] - ref).max()))
        kls.append(kl(codebook0_distribution(ref, model), codebook0_distribution(paged[0], model)))
        past += len(x)
    label = inference or "plugin default"
    print(f"\nu8 KV, inference {label}: max |logit diff| = {max(diffs):.3e}, mean KL(c0) = {np.mean(kls):.3e}")
    # Measured: f32 inference ~7e-5 / ~1e-10, bf16 inference ~2e-3 / ~7e-8 (tiny logits have a std of ~0.16).
    assert max(diffs) < 2e-2 and np.mean(kls) < 1e-4


# ---------------------------------------------------------------------------------------------------------------
# (b) batching and block placement do not change any sequence's result


def run_alone(runner, model, prompt, blocks, text, steps):
    """One sequence by itself: prefill, then greedy decodes. Returns per-frame (codes, logits)."""
    frames, history, x, past = [], [], prompt, 0
    for frame in range(steps):
        entry = Entry(x, past, blocks, frame=frame, history=list(history), text_next=text[frame])
        codes, _, next_embeds, logits = run_step(runner, [entry], model.hidden)
        frames.append((codes[0], logits[0]))
        history.append(int(codes[0, 0]))
        past += len(x)
        x = next_embeds
    return frames


@pytest.mark.parametrize("second_body", [False, True])
def test_batched_scattered_blocks_match_alone(model, f32_runner, second_body):
    # second_body: the code predictor's second compile runs the batches of 2 here, the first one the entries alone.
    runner = model.runner(batched_from=2) if second_body else f32_runner
    # Exact code equality is safe here: the greedy margins of these seeds are > 2e-3, the f32 differences ~1e-7.
    rng = np.random.default_rng(2)
    H = model.hidden
    prompt_a, prompt_b, filler = rows(rng, 45, H), rows(rng, 70, H), rows(rng, 50, H)
    text_a, text_b = rows(rng, 8, H), rows(rng, 8, H)
    blocks_a, blocks_b = [7, 0], [12, 3, 9, 14]

    # A filler sequence writes blocks 3 and 7, then is freed; A and B reuse those blocks.
    run_step(runner, [Entry(filler, 0, [3, 7], emit=False)], H)

    # A prefills whole while B prefills its first chunk, then A decodes while B finishes its prompt, then both decode.
    frames_a, frames_b = [], []
    a = Entry(prompt_a, 0, blocks_a, frame=0, text_next=text_a[0])
    b = Entry(prompt_b[:40], 0, blocks_b, emit=False)
    codes, _, next_embeds, logits = run_step(runner, [a, b], H)
    frames_a.append((codes[0], logits[0]))
    a = Entry(next_embeds[:1], 45, blocks_a, frame=1, history=[int(codes[0, 0])], text_next=text_a[1])
    b = Entry(prompt_b[40:], 40, blocks_b, frame=0, text_next=text_b[0])
    for _ in range(6):
        codes, _, next_embeds, logits = run_step(runner, [b, a], H)  # order differs from the prefill call
        for entry, index, frames, text in ((b, 0, frames_b, text_b), (a, 1, frames_a, text_a)):
            frames.append((codes[index], logits[index]))
            entry.past += len(entry.rows)
            entry.rows = next_embeds[index:index + 1]
            entry.history = entry.history + [int(codes[index, 0])]
            entry.frame += 1
            entry.text_next = text[entry.frame]

    alone_a = run_alone(runner, model, prompt_a, [1, 2], text_a, len(frames_a))
    alone_b = run_alone(runner, model, prompt_b, [4, 5, 6], text_b, len(frames_b))
    for name, batched, alone in (("A", frames_a, alone_a), ("B", frames_b, alone_b)):
        for frame, ((codes, logits), (alone_codes, alone_logits)) in enumerate(zip(batched, alone, strict=True)):
            np.testing.assert_allclose(logits, alone_logits, atol=1e-4, err_msg=f"{name} frame {frame}")
            np.testing.assert_array_equal(codes, alone_codes, err_msg=f"{name} frame {frame}")


# ---------------------------------------------------------------------------------------------------------------
# (c) determinism, seeded sampling, the block size, input validation


def test_greedy_is_deterministic(model, f32_runner):
    first = greedy_trajectory(f32_runner, model, np.random.default_rng(3))
    second = greedy_trajectory(f32_runner, model, np.random.default_rng(3))
    for (codes, embeds, _), (codes2, embeds2, _) in zip(first[2], second[2], strict=True):
        np.testing.assert_array_equal(codes, codes2)
        np.testing.assert_array_equal(embeds, embeds2)


def sampled_frames(runner, model, prompt, text, seed, frames, blocks):
    """Step-by-step sampling (temperature 0.9, top-k 50, top-p 0.9); returns codes and the inputs fed."""
    codes_out, inputs, history, x, past = [], [prompt], [], prompt, 0
    for frame in range(frames):
        entry = Entry(x, past, blocks, frame=frame, seed=seed, temperature=0.9, top_p=0.9, history=list(history),
                      text_next=text[frame])
        codes, _, next_embeds, _ = run_step(runner, [entry], model.hidden, want_logits=False)
        codes_out.append(codes[0])
        history.append(int(codes[0, 0]))
        past += len(x)
        x = next_embeds
        inputs.append(next_embeds)
    return np.stack(codes_out), inputs, history


def test_seeded_sampling_reproduces_codes(model, f32_runner):
    rng = np.random.default_rng(4)
    prompt, text = rows(rng, 20, model.hidden), rows(rng, 5, model.hidden)
    codes, inputs, history = sampled_frames(f32_runner, model, prompt, text, 99, 5, [0, 1])
    again, _, _ = sampled_frames(f32_runner, model, prompt, text, 99, 5, [8, 9])
    other, _, _ = sampled_frames(f32_runner, model, prompt, text, 100, 5, [8, 9])
    np.testing.assert_array_equal(codes, again)
    assert not np.array_equal(codes, other)

    # A preempted request is recomputed: its whole history prefilled at once must sample frame 4 identically.
    recompute = Entry(np.concatenate(inputs[:5]), 0, [11, 10], frame=4, seed=99, temperature=0.9, top_p=0.9,
                      history=history[:4], text_next=text[4])
    recomputed, _, _, _ = run_step(f32_runner, [recompute], model.hidden)
    np.testing.assert_array_equal(recomputed[0], codes[4])


def counter_uniform(seed: int, frame: int, codebook: int) -> float:
    """The runner's draw for (seed, frame, codebook), mirrored from native/sampling.cpp."""
    mask = (1 << 64) - 1

    def mix(x):
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    return (mix(mix(mix(seed) ^ frame) ^ codebook) >> 11) * 2.0 ** -53


def test_eos_rules_and_suppressed_control_ids(model, f32_runner):
    # A huge temperature flattens codebook 0, and this seed's draw falls in the last candidate's slot: the last
    # allowed id is eos while eos is allowed, 2047 once it is forbidden (a leaked control id would show as 3071).
    seed = next(s for s in range(1 << 20) if counter_uniform(s, 3, 0) > 0.9998)
    prompt = rows(np.random.default_rng(6), 4, model.hidden)

    def frame_three(min_new_tokens):
        entry = Entry(prompt, 0, [0], frame=3, seed=seed, temperature=1e6, top_k=0, rep_penalty=1.0)
        return run_step(f32_runner, [entry], model.hidden, min_new_tokens=min_new_tokens)

    codes, is_eos, next_embeds, _ = frame_three(3)
    assert is_eos[0] == 1 and codes[0, 0] == model.eos
    assert not codes[0, 1:].any() and not next_embeds.any()  # no code predictor run for a finished entry
    codes, is_eos, _, _ = frame_three(4)
    assert is_eos[0] == 0 and codes[0, 0] == model.suppress_from - 1


def per_block_shapes(model: Model, kv: str, inference: str | None):
    paged = ov.Core().read_model(model.dir / "talker.xml")
    paged_attention_transformation(paged, False, False, False, False, False, False, False)
    config = {"KV_CACHE_PRECISION": kv} | ({"INFERENCE_PRECISION_HINT": inference} if inference else {})
    compiled = ov.Core().compile_model(paged, "CPU", config)
    return {port.get_any_name(): (port.get_element_type(), [d.get_length() for d in port.get_partial_shape()[1:]])
            for port in compiled.inputs if "_cache." in port.get_any_name()}


@pytest.mark.parametrize("inference", ["", "f32", "bf16"])
@pytest.mark.parametrize("kv", ["u8", "f16", "bf16", "f32"])
def test_the_cpu_rule_of_service_device_is_the_plugins(model, kv, inference):
    """What engine.device lets through compiles, into the cache type it predicts; what it refuses fails to compile.
    Run on every machine, this keeps the rule honest for the CPU at hand (the f16 hint is left out: its refusals
    are unmeasured guesses, see wyoming_chorus/cpu.py)."""
    expected = CPU.kv_caches(inference).get(kv)
    if expected is None:
        with pytest.raises(RuntimeError):
            per_block_shapes(model, kv, inference)
    else:
        shapes = per_block_shapes(model, kv, inference)
        assert {kind.get_type_name() for kind, _ in shapes.values()} == {expected}


@pytest.mark.parametrize("kv, inference", [("u8", ""), ("f16", ""), ("bf16", ""), ("f32", "f32")])
def test_block_geometry_is_read_from_the_compiled_model(model, kv, inference):
    if CPU.kv_error(kv, inference):
        pytest.skip(CPU.kv_error(kv, inference))
    shapes = per_block_shapes(model, kv, inference)
    bytes_per_block = sum(np.prod(shape) * kind.bitwidth // 8 for kind, shape in shapes.values())
    runner = model.runner(kv=kv, inference=inference, num_blocks=0, cache_bytes=10 * bytes_per_block + 1)
    assert runner.kv_precision == CPU.kv_caches(inference)[kv]
    assert runner.block_size == shapes["value_cache.0"][1][1]
    assert runner.bytes_per_block == bytes_per_block
    assert runner.num_blocks == 10
    print(f"\n{kv}: block {runner.block_size} tokens, key {shapes['key_cache.0'][1]}, "
          f"value {shapes['value_cache.0'][1]} per layer, {bytes_per_block // runner.block_size} bytes/token")


def valid_step(model: Model) -> StepBatch:
    rng = np.random.default_rng(5)
    return step_batch([Entry(rows(rng, 3, model.hidden), 0, [0]), Entry(rows(rng, 1, model.hidden), 4, [1])],
                       model.hidden)


def i32(*values: int) -> np.ndarray:
    return np.array(values, np.int32)


BAD_STEPS = {
    "rows do not add up": lambda b: replace(b, new_lens=i32(3, 2)),
    "too few blocks": lambda b: replace(b, past_lens=i32(0, 40)),
    "block out of range": lambda b: replace(b, block_table=i32(0, 16)),
    "begins past the end": lambda b: replace(b, block_table_begins=i32(0, 1, 3)),
    "1-D embeds": lambda b: replace(b, embeds=b.embeds.ravel()),
    "wrong width": lambda b: replace(b, embeds=b.embeds[:, :-1].copy()),
    "empty batch": lambda b: replace(b, new_lens=np.zeros(0, np.int32)),
    "history code": lambda b: replace(b, history=i32(5000), history_begins=i32(0, 1, 1)),
    "top_p zero": lambda b: replace(b, top_p=np.zeros(2, np.float32)),
    "zero new rows": lambda b: replace(b, new_lens=i32(4, 0)),
    # Nothing is converted on the way in: another dtype, or a strided view, is refused by name.
    "int64 block table": lambda b: replace(b, block_table=b.block_table.astype(np.int64)),
    "strided embeds": lambda b: replace(b, embeds=np.repeat(b.embeds, 2, axis=1)[:, ::2]),
}


@pytest.mark.parametrize("case", BAD_STEPS)
def test_bad_step_input_raises_value_error(model, f32_runner, case):
    batch = valid_step(model)
    f32_runner.step(batch)  # the unmodified step is fine
    with pytest.raises(ValueError):
        f32_runner.step(BAD_STEPS[case](batch))


@pytest.mark.parametrize("change", [dict(kv="u7"), dict(device="TPU"), dict(device="AUTO"), dict(device="GPU.x"),
                                    dict(inference="u8"), dict(num_blocks=0, cache_bytes=10)])
def test_bad_runner_options_raise_value_error(model, change):
    with pytest.raises(ValueError):
        model.runner(**change)
