"""engine/typical.py: the mean of recent timings without the slowest twentieth."""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from wyoming_chorus.engine.typical import typical


def test_one_stall_among_many_moves_nothing_but_regular_slow_steps_do():
    assert typical([0.07] * 20 + [1.5]) == pytest.approx(0.07)
    assert typical([0.07, 0.07, 0.07, 0.12] * 5) == pytest.approx((0.07 * 15 + 0.12 * 4) / 19)


def test_few_values_are_averaged_whole_and_none_is_an_error():
    assert typical([0.1, 0.3]) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        typical([])


@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=80))
@example([0.0, 0.0, 0.0, 0.0, 10.0])
def test_it_lies_between_the_fastest_and_the_slowest(values):
    assert min(values) - 1e-9 <= typical(values) <= max(values) + 1e-9
