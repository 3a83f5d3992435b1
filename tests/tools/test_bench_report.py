"""The benchmark report's plot series (tools/chorus_tools/bench/report.py), and what tools/bench.py runs."""
from __future__ import annotations

import json

import bench
import pytest

from chorus_tools.bench.figures import targets
from chorus_tools.bench.household import gap_free_rooms, household, household_table
from chorus_tools.bench.listener import HA_2026_11
from chorus_tools.bench.report import plot_sweeps
from chorus_tools.bench.workloads import Outcome, Scenario


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
    assert "## What a household hears (Home Assistant 2026.11)" in (out / "report.md").read_text()
    one_room = report["household"]["playback"]["one room"]
    assert one_room["requests"] == 1 and one_room["first_sound_p50_s"] > 0


def test_home_assistant_2026_11_plays_from_the_first_chunk():
    """Its first sound comes 0.1 s after the first chunk, not after 5 s of audio as under 2026.2's conversion, and
    audio made at 1x plays with no gap."""
    paced = [(0.5 + 0.32 * i, 0.32) for i in range(40)]  # 12.8 s of audio, each block as the one before ends
    heard = HA_2026_11.hear(0.0, paced)
    assert heard.first_sound_s == pytest.approx(0.6)
    assert (heard.underruns, heard.underrun_s, heard.gave_up, heard.gap_free) == (0, 0.0, False, True)


def test_every_moment_the_server_falls_behind_is_a_gap():
    slow = [(0.5 + 0.4 * i, 0.32) for i in range(11)]  # each block 0.08 s after the one before ran out
    heard = HA_2026_11.hear(0.0, slow)
    assert heard.underruns == 10 and heard.underrun_s == pytest.approx(0.8)
    assert not heard.gap_free
    # Two blocks at once buy the next one 0.32 s: audio ahead of time is slack, not a gap.
    assert HA_2026_11.hear(0.0, [(0.5, 0.32), (1.1, 0.32)]).underruns == 1
    assert HA_2026_11.hear(0.0, [(0.5, 0.32), (0.5, 0.32), (1.1, 0.32)]).underruns == 0


def test_a_satellite_gives_up_on_a_first_sound_after_two_seconds():
    late = HA_2026_11.hear(0.0, [(1.95, 0.32), (2.2, 0.32)])
    assert late.first_sound_s == pytest.approx(2.05) and late.gave_up and not late.gap_free
    assert not HA_2026_11.hear(0.0, [(1.85, 0.32)]).gave_up
    assert HA_2026_11.hear(0.0, []).first_sound_s is None


def _reply(room: int, underrun_s: float, first_sound_s: float = 0.4) -> Outcome:
    return Outcome("assistant", "stream", room, 40, 0.0, ttfa_s=first_sound_s - 0.1, end_s=10.0, audio_s=8.0,
                   first_sound_s=first_sound_s, underruns=int(underrun_s > 0), underrun_s=underrun_s,
                   gave_up=first_sound_s > 2.0)


def _phase(name: str, late: float, one_room_rtf: float) -> dict:
    return {"sweep": [{"rooms": 1, "rtf_p50": one_room_rtf}], "scenarios": [
        Scenario(f"{name} burst 1", [_reply(0, 0.0)]),
        Scenario(f"{name} burst 2", [_reply(0, late), _reply(1, late, first_sound_s=2.5)]),
        Scenario(f"{name} burst 16", [_reply(n, late) for n in range(16)])]}


def test_the_household_table_sets_each_scenario_of_both_policies_side_by_side():
    phases = {"continuous": _phase("continuous", 0.0, 0.5), "fcfs": _phase("fcfs", 1.5, 0.5)}
    heard = household(phases)
    assert heard["playback"]["burst of 2 rooms"]["held"] == 1  # the second room's satellite gave up
    assert heard["fcfs"]["burst of 16 rooms"]["underrun_s_per_request"] == pytest.approx(1.5)
    rows = {line.split(" | ")[0].strip("| "): line for line in household_table(heard)}
    assert "| 1 / 2 · 0 / 2 |" in rows["burst of 2 rooms"] and "| 16 / 16 · 0 / 16 |" in rows["burst of 16 rooms"]
    assert gap_free_rooms(heard["playback"]) == 16 and gap_free_rooms(heard["fcfs"]) == 1
    met = {t["measure"].split(" (")[0]: t for t in targets(phases, {}, {}, heard)}
    assert met["replies held with zero underruns, playback vs FCFS"]["value"] == pytest.approx(18 / 1)
    assert met["underrun seconds per reply, one room alone"]["met"] is True
    assert met["aggregate audio per second, playback vs FCFS, burst of 16 rooms"]["value"] is not None


def test_a_room_made_slower_than_real_time_is_not_held_to_zero_gaps():
    phases = {"continuous": _phase("continuous", 0.0, 1.4)}
    met = {t["measure"]: t for t in targets(phases, {}, {}, household(phases))}
    one = met["underrun seconds per reply, one room alone"]
    assert one["met"] is None and "RTF 1.40" in one["note"]
