"""Household sentences spoken by a model directory's float talker and code predictor, and the same inputs replayed
through another copy of the graphs: the calibration data of a data-aware compression and the material of its check.

The float model runs stateful at f32 (the exact mode), sampling each code as the server would (served_sampling.py)
from a seeded generator, up to `max_frames` frames or eos. What is kept of each utterance is every input row the
talker was fed and every row each frame's code predictor was fed: replayed through a compressed graph (teacher
forcing, so that one changed code does not change every later input), they give its logits at each of the float
model's decisions.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov

from wyoming_chorus.export.household import household_prompts
from wyoming_chorus.export.served_sampling import ServedSampling
from wyoming_chorus.frontend.prompt import PromptBuilder
from wyoming_chorus.modeldir.manifest import ModelDir

EXACT = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}


@dataclass(frozen=True)
class Utterance:
    talker_rows: np.ndarray      # f32 [P + F - 1, H]: the prefill, then each generated frame's input row
    codes: np.ndarray            # i64 [F, 16]: the codes the float model chose
    predictor_rows: np.ndarray   # f32 [F, 16, H]: per frame, the talker's hidden row, C(code 0), E_j(code j+1)
    talker_logits: np.ndarray    # f32 [F, vocab]: the float talker's logits at each frame's decision
    predictor_logits: np.ndarray  # f32 [F, 15, codebook]: the float code predictor's, per frame and head

    @property
    def first_decision(self) -> int:
        """Index of the talker row whose logits chose frame 0's first code (the prefill's last)."""
        return len(self.talker_rows) - len(self.codes)


def speak(model: ModelDir, held_out: bool, max_frames: int, seed: int = 0,
          languages: Sequence[str] | None = None) -> list[Utterance]:
    """The float model's utterances of the household sentences in its languages, or in those of `languages` it
    has (held out or for calibration)."""
    manifest = model.manifest
    sampling = ServedSampling.from_manifest(manifest.generation, manifest.codebook_size, manifest.eos_id)
    prompts = PromptBuilder(model)
    core = ov.Core()
    talker = core.compile_model(model / "talker.xml", "CPU", EXACT).create_infer_request()
    predictor = core.compile_model(model / "code_predictor.xml", "CPU", EXACT).create_infer_request()
    codec, tables = model.embeddings["codec_embedding"], model.embeddings["cp_codec_embedding"]
    rng = np.random.default_rng(seed)
    spoken = []
    spoken_languages = [lang for lang in manifest.languages if languages is None or lang in languages]
    for language, sentence in household_prompts(spoken_languages, held_out):
        prompt = prompts.build(sentence, language=language)
        talker.reset_state()
        rows, predictor_rows, talker_logits, predictor_logits = [prompt.prefill], [], [], []
        codes: list[list[int]] = []
        logits, hidden = _talk(talker, prompt.prefill, 0)
        fed = len(prompt.prefill)
        for frame in range(max_frames):
            talker_logits.append(logits)
            scores = sampling.talker_scores(logits, [c[0] for c in codes], frame)
            first = int(rng.choice(len(scores), p=sampling.talker.distribution(scores)))
            if first == manifest.eos_id:
                break
            frame_rows, frame_codes = [hidden, codec[first]], [first]
            predictor.reset_state()
            for head in range(len(tables)):
                step_rows = np.stack(frame_rows[-2:] if head == 0 else frame_rows[-1:])
                predictor.infer({"inputs_embeds": step_rows[None], "head_index": np.array(head, np.int64)})
                predictor_logits.append(predictor.get_tensor("logits").data[0].copy())
                probs = sampling.predictor.distribution(predictor_logits[-1])
                frame_codes.append(int(rng.choice(len(probs), p=probs)))
                frame_rows.append(tables[head, frame_codes[-1]])
            codes.append(frame_codes)
            predictor_rows.append(np.stack(frame_rows[:-1]))
            if frame + 1 < max_frames:
                row = (codec[first] + sum(frame_rows[2:]) + prompt.pad)[None].astype(np.float32)
                rows.append(row)
                logits, hidden = _talk(talker, row, fed)
                fed += 1
        if codes:
            frames = len(codes)
            spoken.append(Utterance(np.concatenate(rows)[:len(prompt.prefill) + frames - 1],
                                    np.asarray(codes, np.int64), np.asarray(predictor_rows, np.float32),
                                    np.asarray(talker_logits[:frames]),
                                    np.asarray(predictor_logits, np.float32).reshape(frames, len(tables), -1)))
    return spoken


def _talk(request: ov.InferRequest, rows: np.ndarray, past: int) -> tuple[np.ndarray, np.ndarray]:
    request.infer(talker_inputs(rows, past))
    return request.get_tensor("logits").data[0, -1].copy(), request.get_tensor("hidden").data[0, -1].copy()


def talker_inputs(rows: np.ndarray, past: int = 0) -> dict[str, np.ndarray]:
    n = len(rows)
    return {"inputs_embeds": np.ascontiguousarray(rows[None], np.float32),
            "attention_mask": np.ones((1, past + n), np.int64),
            "position_ids": np.arange(past, past + n, dtype=np.int64)[None], "beam_idx": np.zeros(1, np.int32)}


def calibration_inputs(graph: str, spoken: list[Utterance]) -> Iterator[dict[str, np.ndarray]]:
    """One input per utterance (talker) or per frame (code predictor), each a whole sequence from an empty state:
    NNCF resets a stateful model's state before every input, and a causal graph computes the same rows at once as
    it does one by one."""
    for utterance in spoken:
        if graph == "talker":
            yield talker_inputs(utterance.talker_rows)
        else:
            for rows in utterance.predictor_rows:
                yield {"inputs_embeds": rows[None], "head_index": np.array(len(rows) - 2, np.int64)}


def replay(talker_xml: Path, predictor_xml: Path, config: dict,
           spoken: list[Utterance]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Logits of a talker and a code predictor compiled with `config` at every decision of `spoken`: per
    utterance, the talker's [F, vocab] and the code predictor's [F, 15, codebook]."""
    core = ov.Core()
    talker = core.compile_model(talker_xml, "CPU", config).create_infer_request()
    predictor = core.compile_model(predictor_xml, "CPU", config).create_infer_request()
    talker_logits, predictor_logits = [], []
    for utterance in spoken:
        talker.reset_state()
        talker.infer(talker_inputs(utterance.talker_rows))
        talker_logits.append(talker.get_tensor("logits").data[0, utterance.first_decision:].copy())
        frames = []
        for rows in utterance.predictor_rows:
            predictor.reset_state()
            heads = []
            for head in range(len(rows) - 1):
                step_rows = rows[:2] if head == 0 else rows[head + 1:head + 2]
                predictor.infer({"inputs_embeds": step_rows[None], "head_index": np.array(head, np.int64)})
                heads.append(predictor.get_tensor("logits").data[0].copy())
            frames.append(np.stack(heads))
        predictor_logits.append(np.stack(frames))
    return talker_logits, predictor_logits
