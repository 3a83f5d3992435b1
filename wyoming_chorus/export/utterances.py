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
from wyoming_chorus.frontend.prompt import Prompt, PromptBuilder
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
    has (held out or for calibration). The sentences are spoken side by side: each has its own talker state, and
    each frame's 15 code predictor steps run for all of them at once (one batched call per step instead of one per
    sentence: at real dimensions the predictor streams its weights once for all; at test size a call's fixed cost
    is most of it)."""
    manifest = model.manifest
    sampling = ServedSampling.from_manifest(manifest.generation, manifest.codebook_size, manifest.eos_id)
    prompts = PromptBuilder(model)
    core = ov.Core()
    talker = core.compile_model(model / "talker.xml", "CPU", EXACT)
    predictor = core.compile_model(model / "code_predictor.xml", "CPU", EXACT).create_infer_request()
    codec, tables = model.embeddings["codec_embedding"], model.embeddings["cp_codec_embedding"]
    rng = np.random.default_rng(seed)
    spoken_languages = [lang for lang in manifest.languages if languages is None or lang in languages]
    voices = [_Voice(talker.create_infer_request(), prompts.build(sentence, language=language))
              for language, sentence in household_prompts(spoken_languages, held_out)]
    for frame in range(max_frames):
        speaking = [voice for voice in voices if voice.first_code(sampling, rng, frame, manifest.eos_id)]
        if not speaking:
            break
        starts = [np.stack([voice.hidden, codec[voice.codes[-1][0]]]) for voice in speaking]
        for voice, (rows, codes, logits) in zip(speaking, _predict(predictor, sampling, rng, starts, tables),
                                                strict=True):
            voice.codes[-1].extend(codes)
            voice.predictor_rows.append(rows[:-1])
            voice.predictor_logits.append(logits)
            if frame + 1 < max_frames:
                voice.talk((codec[voice.codes[-1][0]] + rows[2:].sum(0) + voice.pad)[None].astype(np.float32))
    return [voice.utterance() for voice in voices if voice.codes]


class _Voice:
    """One sentence being spoken: its talker state and what is kept of it."""

    def __init__(self, talker: ov.InferRequest, prompt: Prompt):
        self.talker, self.pad, self.prefill_length = talker, prompt.pad, len(prompt.prefill)
        self.rows: list[np.ndarray] = [prompt.prefill]
        self.talker_logits: list[np.ndarray] = []
        self.codes: list[list[int]] = []
        self.predictor_rows: list[np.ndarray] = []
        self.predictor_logits: list[np.ndarray] = []
        self.ended = False
        self.logits, self.hidden = _talk(talker, prompt.prefill, 0)
        self.fed = len(prompt.prefill)

    def first_code(self, sampling: ServedSampling, rng: np.random.Generator, frame: int, eos: int) -> bool:
        """Draws this frame's first code (the talker's); False once the sentence has ended."""
        if self.ended:
            return False
        self.talker_logits.append(self.logits)
        scores = sampling.talker_scores(self.logits, [c[0] for c in self.codes], frame)
        first = int(rng.choice(len(scores), p=sampling.talker.distribution(scores)))
        self.ended = first == eos
        if not self.ended:
            self.codes.append([first])
        return not self.ended

    def talk(self, row: np.ndarray) -> None:
        self.rows.append(row)
        self.logits, self.hidden = _talk(self.talker, row, self.fed)
        self.fed += 1

    def utterance(self) -> Utterance:
        frames = len(self.codes)
        return Utterance(np.concatenate(self.rows)[:self.prefill_length + frames - 1], np.asarray(self.codes, np.int64),
                         np.asarray(self.predictor_rows, np.float32), np.asarray(self.talker_logits[:frames]),
                         np.asarray(self.predictor_logits, np.float32))


def _predict(predictor: ov.InferRequest, sampling: ServedSampling, rng: np.random.Generator,
             starts: list[np.ndarray], tables: np.ndarray) -> list[tuple[np.ndarray, list[int], np.ndarray]]:
    """One frame's code predictor steps for several sentences at once, from their [hidden, C(code 0)] rows: per
    sentence its rows [17, H] (the last, E_15 of the last code, is fed to no step), codes 1-15 and logits [15, V]."""
    rows = [[*start] for start in starts]
    codes: list[list[int]] = [[] for _ in starts]
    logits: list[list[np.ndarray]] = [[] for _ in starts]
    predictor.reset_state()
    for head in range(len(tables)):
        step = np.stack([np.stack(r[-2:] if head == 0 else r[-1:]) for r in rows]).astype(np.float32)
        predictor.infer({"inputs_embeds": step, "head_index": np.array(head, np.int64)})
        out = predictor.get_tensor("logits").data
        for index, sentence_rows in enumerate(rows):
            logits[index].append(out[index].copy())
            probs = sampling.predictor.distribution(logits[index][-1])
            codes[index].append(int(rng.choice(len(probs), p=probs)))
            sentence_rows.append(tables[head, codes[index][-1]])
    return [(np.stack(r), c, np.stack(lg)) for r, c, lg in zip(rows, codes, logits, strict=True)]


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
    utterance, the talker's [F, vocab] and the code predictor's [F, 15, codebook]. One frame at a time, unlike
    speak(): a stateful code predictor compiled with a compressed KV cache or bf16 inference (as served) gave
    wrong logits at a batch of frames (OpenVINO 2026.4, tiny model: the first call at a new batch size off by up to
    0.7, NaN at 18 frames in bf16), where the exact f32 one speak() runs matches one frame at a time within 2e-7."""
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
