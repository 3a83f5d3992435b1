"""The export's restatement of the server's sampling (export/served_sampling.py), on rows worked out by hand from the
rules of native/sampling.cpp: top-k keeps ties with the k-th, top-p drops the least likely while their share stays
within 1 - top_p, the codec head suppresses control ids and penalises the codes said before."""
from __future__ import annotations

import numpy as np
import pytest

from wyoming_chorus.export.served_sampling import SamplingRule, ServedSampling, total_variation

LOG = np.log(np.array([4.0, 2.0, 2.0, 1.5, 0.5]))  # weights 4:2:2:1.5:0.5 (shares 0.4 ... 0.05) at temperature 1


@pytest.mark.parametrize(("rule", "expected"), [
    (SamplingRule(1.0, 0, 1.0), [0.4, 0.2, 0.2, 0.15, 0.05]),
    (SamplingRule(1.0, 2, 1.0), [0.5, 0.25, 0.25, 0.0, 0.0]),            # the tie with the 2nd is kept
    (SamplingRule(1.0, 0, 0.85), np.array([4, 2, 2, 1.5, 0]) / 9.5),     # 0.05 goes; 0.05 + 0.15 > 0.15 stays
    (SamplingRule(1.0, 0, 0.75), np.array([4, 2, 2, 0, 0]) / 8),         # 0.05 + 0.15 <= 0.25: both go
    (SamplingRule(0.0, 50, 1.0), [1.0, 0.0, 0.0, 0.0, 0.0]),             # greedy
    (SamplingRule(0.5, 0, 1.0), np.array([16, 4, 4, 2.25, 0.25]) / 26.5),  # temperature 0.5 squares the weights
])
def test_distributions_worked_out_by_hand(rule, expected):
    np.testing.assert_allclose(rule.distribution(LOG), expected, atol=1e-12)


def test_the_codec_head_rules():
    sampling = ServedSampling(SamplingRule(1.0, 0, 1.0), SamplingRule(1.0, 0, 1.0), repetition_penalty=2.0,
                              min_new_tokens=2, codebook_size=4, eos_id=5)
    logits = np.array([1.0, -1.0, 2.0, 0.5, 9.0, 3.0, 9.0])
    early = sampling.talker_scores(logits, [0, 1, 1], frame=1)
    np.testing.assert_array_equal(early, [0.5, -2.0, 2.0, 0.5, -np.inf, -np.inf, -np.inf])
    assert sampling.talker_scores(logits, [], frame=2)[5] == 3.0  # eos from min_new_tokens on
    assert int(np.argmax(sampling.talker_scores(logits, [], frame=2))) == 5


def test_total_variation():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.5, 0.25])
    assert total_variation(p, q) == 0.25 and total_variation(p, p) == 0.0
    assert total_variation(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == 1.0
