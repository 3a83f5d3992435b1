"""One native step's input, by name: the scheduled entries laid out as the native runner reads them.

`StepBatch` is the one list of what crosses into `Runner.step` (native/bindings.cpp reads each field by its name into
native/step.hpp's `StepBatch` of views; a name on one side only fails at the first step, with the name). S entries,
N = sum(new_lens) new rows; per-entry runs of different lengths (block tables, repetition histories) are flat arrays
split by a `*_begins` array of S + 1 offsets. The arrays must already have the dtype shown and be C-contiguous: the
native side reads them in place and converts nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wyoming_chorus.engine.scheduler import ScheduledEntry


@dataclass(frozen=True)
class StepBatch:
    embeds: np.ndarray              # f32 [N, H]: each entry's new input rows, entry after entry
    new_lens: np.ndarray            # i32 [S]: new rows per entry
    past_lens: np.ndarray           # i32 [S]: rows already in the entry's KV blocks
    block_table: np.ndarray         # i32 [sum blocks]: each entry's KV blocks in order
    block_table_begins: np.ndarray  # i32 [S + 1]
    emit: np.ndarray                # u8 [S]: 1 if the entry's last row produces a frame (else a prefill chunk)
    text_next: np.ndarray           # f32 [S, H]: the text-track row added to the next frame's input
    frame_index: np.ndarray         # i32 [S]: which frame an emitting entry produces (seeds its sampler)
    seeds: np.ndarray               # u64 [S]
    temperature: np.ndarray         # f32 [S]: the talker's (first codebook) sampling ...
    top_k: np.ndarray               # i32 [S]
    top_p: np.ndarray               # f32 [S]
    rep_penalty: np.ndarray         # f32 [S]
    sub_temperature: np.ndarray     # f32 [S]: ... and the code predictor's (the other codebooks)
    sub_top_k: np.ndarray           # i32 [S]
    sub_top_p: np.ndarray           # f32 [S]
    history: np.ndarray             # i32 [sum h]: each entry's first-codebook codes so far (repetition penalty)
    history_begins: np.ndarray      # i32 [S + 1]
    min_new_tokens: int             # frames before end-of-speech may be sampled
    want_logits: bool               # also return each entry's talker logits (tests)

    @classmethod
    def of(cls, entries: list[ScheduledEntry], min_new_tokens: int, want_logits: bool = False) -> StepBatch:
        seqs = [e.seq for e in entries]
        params = [s.sampling for s in seqs]
        history = [np.asarray(s.c0_history, dtype=np.int32) for s in seqs]

        def per_entry(values: list, dtype: type) -> np.ndarray:
            return np.array(values, dtype=dtype)

        return cls(
            embeds=_f32([e.seq.rows(e.start, e.num_new) for e in entries]),
            new_lens=per_entry([e.num_new for e in entries], np.int32),
            past_lens=per_entry([e.start for e in entries], np.int32),
            block_table=_flat([np.asarray(s.block_table, dtype=np.int32) for s in seqs]),
            block_table_begins=_begins([len(s.block_table) for s in seqs]),
            emit=per_entry([e.emits for e in entries], np.uint8),
            # The frame each emitting entry produces; its text-track row goes into that frame's next input.
            text_next=np.ascontiguousarray(np.stack([s.text_for_frame(len(s.frames)) for s in seqs]), np.float32),
            frame_index=per_entry([len(s.frames) for s in seqs], np.int32),
            seeds=per_entry([p.seed for p in params], np.uint64),
            temperature=per_entry([p.temperature for p in params], np.float32),
            top_k=per_entry([p.top_k for p in params], np.int32),
            top_p=per_entry([p.top_p for p in params], np.float32),
            rep_penalty=per_entry([p.repetition_penalty for p in params], np.float32),
            sub_temperature=per_entry([p.sub_temperature for p in params], np.float32),
            sub_top_k=per_entry([p.sub_top_k for p in params], np.int32),
            sub_top_p=per_entry([p.sub_top_p for p in params], np.float32),
            history=_flat(history),
            history_begins=_begins([len(h) for h in history]),
            min_new_tokens=min_new_tokens,
            want_logits=want_logits,
        )


def _f32(rows: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate(rows), np.float32)


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int32, copy=False) if arrays else np.zeros(0, np.int32)


def _begins(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
