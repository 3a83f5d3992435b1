"""The soak's verdict (tools/soak.py, chorus_tools/soak/report.py): PASS only when the server counted every request
sent, freed every KV block, no request failed and the server ran to the end."""
from argparse import Namespace

import pytest

from chorus_tools.soak.records import Load, Outcome, Sample
from chorus_tools.soak.report import report, slope

ARGS = Namespace(minutes=1.0, rooms=2, warm_up=10.0)


def run(outcomes: list[Outcome], final: dict[str, float], exit_code: int | None = None) -> tuple[str, bool]:
    """The report over a minute whose RSS grows 1 MB every 10 s after the warm-up, 4 requests sent."""
    load = Load(began=0.0, sent=4, outcomes=outcomes)
    samples = [Sample(t, 100.0 + t / 10, 20, 30, 2.0, int(t // 15), 4.0) for t in (0.0, 10.0, 20.0, 30.0, 60.0)]
    return report(ARGS, samples, load, final, exit_code)


def served(kind: str = "oneshot", ok: bool = True) -> Outcome:
    return Outcome(kind, 1.0, ok, chunks=3, longest_gap_s=0.2, first_audio_s=0.5)


GOOD = {"kv_blocks_used": 0.0, "requests_counted": 4.0, "status_ok": 4.0}


def test_a_clean_run_passes_and_says_what_it_measured():
    text, passed = run([served(), served(), served("stream"), served("hangup")], GOOD)
    assert passed and text.endswith("**PASS**")
    assert "4 of 4 sent (equal): ok 4" in text
    assert "slope" in text and "+360.0 MB/hour" in text  # 0.1 MB/s after the warm-up


@pytest.mark.parametrize(("final", "outcomes", "exit_code", "says"), [
    ({**GOOD, "kv_blocks_used": 3.0}, [served()] * 4, None, "(NOT FREED)"),
    ({**GOOD, "requests_counted": 3.0}, [served()] * 4, None, "(MISMATCH)"),
    (GOOD, [served(), served(ok=False), served(), served()], None, "| failed requests (client side) | 1: no audio |"),
    (GOOD, [served()] * 4, 1, "exited early with 1"),
])
def test_a_leak_a_miscount_a_failure_or_a_dead_server_fails(final, outcomes, exit_code, says):
    text, passed = run(outcomes, final, exit_code)
    assert not passed and text.endswith("**FAIL**")
    assert says in text


def test_slope_is_the_least_squares_fit_and_zero_without_a_spread():
    assert slope([(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) == pytest.approx(2.0)
    assert slope([(1.0, 1.0)]) == 0.0 and slope([(2.0, 1.0), (2.0, 5.0)]) == 0.0
