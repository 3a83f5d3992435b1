"""How far a compressed talker and code predictor are from the float ones, where a listener would hear it.

Two figures per graph, over every decision of held-out household utterances (utterances.py), the compressed graph
fed the float model's inputs:
- code agreement: the share of decisions where both pick the same greedy code (after the codec head's rules);
- TVD: the mean total variation distance between the two distributions the server samples from (temperature,
  top-k, top-p as in chorus.json's generation settings). A TVD of d means that, with their random draws shared as
  well as possible, the compressed model draws another code than the float one at a share d of the steps: the
  audible change, where a greedy agreement only sees the most likely code.

The threshold (Threshold, the export's --int4-max-tvd and --int4-min-agreement) is what INT4 must meet to be kept.
Its defaults: a mean TVD of at most 0.05, i.e. at least 19 of 20 drawn codes can stay what the float model would
have drawn, and a greedy agreement of at least 0.9. Why there: a code the float model would not have drawn is not
an error by itself (sampling at temperature 0.9 draws unlikely codes all the time), but a shift of the whole
distribution by more than that is a different voice or accent rather than noise, and INT8 weights, the format
served so far, are expected to stay well within it (bf16 arithmetic alone moves logits by ~1%, INT8 by ~3.5% at
0.6B dims). A graph that misses either figure is kept at INT8 instead.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from wyoming_chorus.export.served_sampling import ServedSampling, total_variation

if TYPE_CHECKING:  # utterances.py imports OpenVINO and the front end; the CLI reads Threshold without them
    from wyoming_chorus.export.utterances import Utterance


class ThresholdError(ValueError):
    """A threshold outside 0..1."""


@dataclass(frozen=True)
class Threshold:
    max_tvd: float = 0.05
    min_agreement: float = 0.9

    def __post_init__(self) -> None:
        if not (0.0 <= self.max_tvd <= 1.0 and 0.0 <= self.min_agreement <= 1.0):
            raise ThresholdError(f"the INT4 threshold's TVD and agreement are shares between 0 and 1, not "
                             f"{self.max_tvd} and {self.min_agreement}")


@dataclass(frozen=True)
class Distance:
    agreement: float   # share of decisions with the same greedy code
    tvd: float         # mean total variation distance of the served distributions
    decisions: int

    def within(self, threshold: Threshold) -> bool:
        return self.tvd <= threshold.max_tvd and self.agreement >= threshold.min_agreement

    def as_dict(self) -> dict:
        return {key: round(value, 4) if isinstance(value, float) else value for key, value in asdict(self).items()}


def talker_distance(sampling: ServedSampling, spoken: list[Utterance], compressed: list[np.ndarray]) -> Distance:
    """Codebook 0: each decision under the codec head's rules, with the float model's codes as its history;
    `compressed`: per utterance, the compressed talker's logits at its decisions."""
    agree, distances = [], []
    for utterance, cmp_rows in zip(spoken, compressed, strict=True):
        history = utterance.codes[:, 0]
        for frame, (ref_logits, cmp_logits) in enumerate(zip(utterance.talker_logits, cmp_rows, strict=True)):
            ref = sampling.talker_scores(ref_logits, history[:frame], frame)
            cmp = sampling.talker_scores(cmp_logits, history[:frame], frame)
            agree.append(np.argmax(ref) == np.argmax(cmp))
            distances.append(total_variation(sampling.talker.distribution(ref), sampling.talker.distribution(cmp)))
    return Distance(float(np.mean(agree)), float(np.mean(distances)), len(agree))


def predictor_distance(sampling: ServedSampling, spoken: list[Utterance], compressed: list[np.ndarray]) -> Distance:
    """Codebooks 1-15: every head of every frame."""
    ref_rows = np.concatenate([u.predictor_logits.reshape(-1, u.predictor_logits.shape[-1]) for u in spoken])
    cmp_rows = np.concatenate([logits.reshape(-1, logits.shape[-1]) for logits in compressed])
    agree = ref_rows.argmax(-1) == cmp_rows.argmax(-1)
    rule = sampling.predictor
    distances = [total_variation(rule.distribution(ref), rule.distribution(cmp))
                 for ref, cmp in zip(ref_rows, cmp_rows, strict=True)]
    return Distance(float(agree.mean()), float(np.mean(distances)), len(agree))
