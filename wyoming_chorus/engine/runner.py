"""Turns one scheduled batch into the flat arrays of the native Runner.step and back.

The native runner executes what the scheduler decided and nothing else; this module is the only place that knows
both sides: which rows of which Sequence go in, and how the per-entry outputs map back.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import openvino  # noqa: F401  (loads libopenvino before the extension that links against it)

from wyoming_chorus import _native
from wyoming_chorus.engine.device import check_device
from wyoming_chorus.engine.scheduler import ScheduledEntry
from wyoming_chorus.engine.sequence import StepOutput
from wyoming_chorus.modeldir.manifest import ModelDir


@dataclass(frozen=True)
class RunnerOptions:
    device: str = "AUTO"
    kv_precision: str = "u8"
    inference_precision: str = ""
    num_blocks: int = 0
    kv_cache_bytes: int = 256 << 20


class PagedRunner:
    """Owns the native runner of one model directory."""

    def __init__(self, model: ModelDir, options: RunnerOptions):
        """Raises SetupError, before compiling anything, for a device that is not there or a KV precision it
        cannot run."""
        device = check_device(options.device, options.kv_precision, options.inference_precision)
        manifest, embeddings = model.manifest, model.embeddings
        self.eos_id = manifest.eos_id
        self.min_new_tokens = manifest.min_new_tokens
        self._native = _native.Runner(
            str(model / "talker.xml"),
            str(model / "code_predictor.xml"),
            embeddings["codec_embedding"],
            embeddings["cp_codec_embedding"],
            device,
            options.kv_precision,
            options.inference_precision,
            options.num_blocks,
            options.kv_cache_bytes,
            self.eos_id,
            manifest.codebook_size,  # ids from here up are control ids
        )
        self.hidden_size = self._native.hidden_size
        self.block_size = self._native.block_size
        self.num_blocks = self._native.num_blocks
        self.bytes_per_block = self._native.bytes_per_block
        self.device = self._native.device
        self.kv_precision = self._native.kv_precision

    def step(self, entries: list[ScheduledEntry], want_logits: bool = False) -> StepOutput:
        seqs = [e.seq for e in entries]
        params = [s.sampling for s in seqs]
        embeds = np.concatenate([e.seq.rows(e.start, e.num_new) for e in entries]).astype(np.float32, copy=False)
        history = [np.asarray(s.c0_history, dtype=np.int32) for s in seqs]
        # The frame each emitting entry produces; its text-track row goes into that frame's next input.
        frame_index = np.array([len(s.frames) for s in seqs], dtype=np.int32)
        text_next = np.stack([s.text_for_frame(len(s.frames)) for s in seqs]).astype(np.float32, copy=False)
        codes, is_eos, next_embeds, logits = self._native.step(
            np.ascontiguousarray(embeds),
            np.array([e.num_new for e in entries], dtype=np.int32),
            np.array([e.start for e in entries], dtype=np.int32),
            _flat([np.asarray(s.block_table, dtype=np.int32) for s in seqs]),
            _begins([len(s.block_table) for s in seqs]),
            np.array([e.emits for e in entries], dtype=np.uint8),
            np.ascontiguousarray(text_next),
            frame_index,
            np.array([p.seed for p in params], dtype=np.uint64),
            np.array([p.temperature for p in params], dtype=np.float32),
            np.array([p.top_k for p in params], dtype=np.int32),
            np.array([p.top_p for p in params], dtype=np.float32),
            np.array([p.repetition_penalty for p in params], dtype=np.float32),
            np.array([p.sub_temperature for p in params], dtype=np.float32),
            np.array([p.sub_top_k for p in params], dtype=np.int32),
            np.array([p.sub_top_p for p in params], dtype=np.float32),
            _flat(history),
            _begins([len(h) for h in history]),
            self.min_new_tokens,
            want_logits,
        )
        return StepOutput(codes=codes, is_eos=is_eos.astype(bool), next_embeds=next_embeds, logits=logits)


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays).astype(np.int32, copy=False) if arrays else np.zeros(0, np.int32)


def _begins(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
