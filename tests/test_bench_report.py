"""The benchmark report's plot series (tools/chorus_tools/bench/report.py), and what tools/bench.py runs."""
from __future__ import annotations

import json

import bench

from chorus_tools.bench.report import plot_sweeps


def _rows(ttfa: float) -> list[dict]:
    return [{"rooms": rooms, "ttfa_p50_s": ttfa * rooms, "ttfa_p95_s": ttfa * rooms, "audio_s_per_wall_s": 1.0}
            for rooms in (1, 8)]


def test_every_server_that_ran_a_sweep_is_its_own_line():
    # The playback and FCFS servers are both continuous batching: their lines were once one legend entry, and the
    # FCFS rows replaced the playback ones in the plots.
    phases = {"continuous": {"sweep": _rows(1.0)}, "fcfs": {"sweep": _rows(2.0)},
              "static": {"sweep": _rows(3.0)}, "max_batch_1": {"sweep": _rows(4.0)}, "broken": {"error": "x"}}
    sweeps = plot_sweeps(phases)
    assert len(sweeps) == 4
    assert sorted(rows[0]["ttfa_p50_s"] for rows in sweeps.values()) == [1.0, 2.0, 3.0, 4.0]
    assert any("playback" in label for label in sweeps) and any("FCFS" in label for label in sweeps)


def test_the_playback_server_alone_runs_only_what_was_asked(tmp_path):
    """An A/B between two builds runs the playback server alone: no FCFS server and, with --probes 0, no
    announcement-under-readers scenario (its readers would otherwise run for nothing); the report is still written."""
    out = tmp_path / "report"
    assert bench.main(["--quick", "--rooms", "1", "--static-rooms", "", "--serial-rooms", "", "--poisson-requests",
                       "0", "--probes", "0", "--skip-engine", "--skip-fcfs", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert list(report["phases"]) == ["continuous"]
    scenarios = [s["name"] for s in report["phases"]["continuous"]["scenarios"]]
    assert scenarios == ["continuous burst 1"], scenarios
    assert (out / "report.md").read_text().count("| 1 |") >= 1
