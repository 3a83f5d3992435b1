"""The distribution a served code is drawn from, in numpy: the native runner's rules (native/sampling.cpp) restated so
that the export can compare two models where a listener would hear the difference.

Codebook 0 (the talker): repetition penalty on the codes said so far, control ids suppressed except eos, eos only
from `min_new_tokens` on; codebooks 1-15 (the code predictor): the raw logits. Then temperature, top-k (ties with
the k-th kept) and top-p (the least likely dropped while their share stays <= 1 - top_p), as the server samples.
A temperature of 0 (greedy) is a distribution with all its mass on the argmax.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SamplingRule:
    temperature: float
    top_k: int
    top_p: float

    def distribution(self, scores: np.ndarray) -> np.ndarray:
        """Probabilities [V] (f64) of the processed `scores` (-inf where masked)."""
        scores = np.asarray(scores, np.float64)
        probs = np.zeros(len(scores))
        if self.temperature <= 0:
            probs[int(np.argmax(scores))] = 1.0
            return probs
        scaled = scores / self.temperature
        keep = np.isfinite(scaled)
        if 0 < self.top_k < keep.sum():
            kth = np.partition(scaled[keep], -self.top_k)[-self.top_k]
            keep &= scaled >= kth
        weights = np.where(keep, np.exp(scaled - scaled[keep].max()), 0.0)
        if self.top_p < 1.0:
            order = np.argsort(weights[keep], kind="stable")
            ids = np.flatnonzero(keep)[order]
            cumulative = np.cumsum(weights[ids])
            # Dropped while the running share stays within 1 - top_p; the most likely one always stays.
            dropped = ids[:-1][cumulative[:-1] <= (1.0 - self.top_p) * weights.sum()]
            weights[dropped] = 0.0
        return weights / weights.sum()


@dataclass(frozen=True)
class ServedSampling:
    talker: SamplingRule
    predictor: SamplingRule
    repetition_penalty: float
    min_new_tokens: int
    codebook_size: int     # ids from here up are control ids
    eos_id: int

    @classmethod
    def from_manifest(cls, generation: Mapping, codebook_size: int, eos_id: int) -> ServedSampling:
        return cls(SamplingRule(float(generation["temperature"]), int(generation["top_k"]), float(generation["top_p"])),
                   SamplingRule(float(generation["subtalker_temperature"]), int(generation["subtalker_top_k"]),
                                float(generation["subtalker_top_p"])),
                   float(generation["repetition_penalty"]), int(generation["min_new_tokens"]), codebook_size, eos_id)

    def talker_scores(self, logits: np.ndarray, history: Sequence[int] | np.ndarray, frame: int) -> np.ndarray:
        """Codebook-0 logits after the codec head's rules (the greedy code is their argmax)."""
        scores = np.asarray(logits, np.float64).copy()
        seen = np.unique(np.asarray(history, np.int64))
        if len(seen) and self.repetition_penalty != 1.0:
            scores[seen] = np.where(scores[seen] < 0, scores[seen] * self.repetition_penalty,
                                    scores[seen] / self.repetition_penalty)
        eos = scores[self.eos_id]
        scores[self.codebook_size:] = -np.inf
        scores[self.eos_id] = eos if frame >= self.min_new_tokens else -np.inf
        return scores


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Half the L1 distance: the share of draws that must differ between the two, however their randomness is
    shared (and no more, for the best sharing)."""
    return 0.5 * float(np.abs(p - q).sum())
