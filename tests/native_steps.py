"""The native runner's test vocabulary: the tiny model with its embedding tables (a module fixture), one scheduled
entry of a step, a step built and run from entries, random input rows. Shared by the runner's tests and its scratch
hygiene tests."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
from safetensors.numpy import load_file

from wyoming_chorus import _native
from wyoming_chorus.engine.step_batch import StepBatch
from wyoming_chorus.export.builtin import resolve_model


@dataclass
class Model:
    dir: object
    manifest: dict
    codec: np.ndarray      # C [V, H]
    cp_codec: np.ndarray   # E_j [15, 2048, H]

    @property
    def hidden(self) -> int:
        return self.codec.shape[1]

    @property
    def eos(self) -> int:
        return self.manifest["codec_ids"]["eos"]

    @property
    def suppress_from(self) -> int:
        return self.manifest["codebook_size"]  # ids from here up are control ids

    def runner(self, kv="f32", inference="f32", num_blocks=16, cache_bytes=0, device="CPU",
               activation_group=None, batched_group=None, batched_from=0, native=False) -> _native.Runner:
        return _native.Runner(str(self.dir / "talker.xml"), str(self.dir / "code_predictor.xml"), self.codec,
                              self.cp_codec, device, kv, inference, num_blocks, cache_bytes, self.eos,
                              self.suppress_from, activation_group, batched_group, batched_from, native)


def tiny_model() -> Model:
    """builtin:tiny with its embedding tables (each test module keeps one, as a module fixture)."""
    path = resolve_model("builtin:tiny")
    tables = load_file(str(path / "embeddings.safetensors"))
    return Model(path, json.loads((path / "chorus.json").read_text()), tables["codec_embedding"],
                 tables["cp_codec_embedding"])


@dataclass
class Entry:
    """One scheduled entry of a step; greedy unless a temperature is given."""
    rows: np.ndarray
    past: int
    blocks: list[int]
    emit: bool = True
    frame: int = 0
    seed: int = 0
    temperature: float = 0.0
    top_k: int = 50
    top_p: float = 1.0
    rep_penalty: float = 1.05
    history: list[int] = field(default_factory=list)
    text_next: np.ndarray | None = None


def step_batch(entries: list[Entry], hidden: int, min_new_tokens: int = 2, want_logits: bool = True) -> StepBatch:
    def begins(lengths):
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)

    def per_entry(name, dtype):
        return np.array([getattr(e, name) for e in entries], dtype=dtype)

    return StepBatch(
        embeds=np.concatenate([e.rows for e in entries]).astype(np.float32),
        new_lens=np.array([len(e.rows) for e in entries], np.int32),
        past_lens=per_entry("past", np.int32),
        block_table=np.concatenate([e.blocks for e in entries]).astype(np.int32),
        block_table_begins=begins([len(e.blocks) for e in entries]),
        emit=per_entry("emit", np.uint8),
        text_next=np.stack([np.zeros(hidden, np.float32) if e.text_next is None else e.text_next for e in entries])
        .astype(np.float32),
        frame_index=per_entry("frame", np.int32),
        seeds=per_entry("seed", np.uint64),
        temperature=per_entry("temperature", np.float32),
        top_k=per_entry("top_k", np.int32),
        top_p=per_entry("top_p", np.float32),
        rep_penalty=per_entry("rep_penalty", np.float32),
        sub_temperature=per_entry("temperature", np.float32),
        sub_top_k=per_entry("top_k", np.int32),
        sub_top_p=per_entry("top_p", np.float32),
        history=np.array([c for e in entries for c in e.history], np.int32),
        history_begins=begins([len(e.history) for e in entries]),
        min_new_tokens=min_new_tokens,
        want_logits=want_logits,
    )


def run_step(runner, entries: list[Entry], hidden: int, **options):
    return runner.step(step_batch(entries, hidden, **options))


def rows(rng, n, hidden):
    return (rng.standard_normal((n, hidden)) * 0.5).astype(np.float32)
