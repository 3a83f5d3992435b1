"""The benchmark report's plot series (tools/chorus_tools/bench/report.py), and what tools/bench.py runs."""
from __future__ import annotations

import json

import bench
import pytest

from chorus_tools.bench.alternate import alternation
from chorus_tools.bench.figures import targets
from chorus_tools.bench.household import (
    bursts_by_kind,
    bursts_by_kind_table,
    gap_free_rooms,
    household,
    household_table,
)
from chorus_tools.bench.listener import HA_2026_11
from chorus_tools.bench.report import plot_sweeps
from chorus_tools.bench.summary import pooled, summarise
from chorus_tools.bench.verdict import issue_37_targets, stage_rows, summary_lines
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


def test_a_bursts_gaps_are_shown_by_kind_of_reply():
    """A policy that keeps the announcement whole and gaps the assistant's reply has the same total as one that gaps
    both alike; the table by kind tells them apart (one room alone is no burst: not in it)."""
    def burst(name: str, assistant_gap: float, announcement_gap: float) -> dict:
        announcement = Outcome("announce", "oneshot", 1, 8, 0.0, ttfa_s=0.5, end_s=4.0, audio_s=3.2,
                               first_sound_s=0.6, underruns=int(announcement_gap > 0), underrun_s=announcement_gap)
        return {"scenarios": [Scenario(f"{name} burst 1", [_reply(0, 0.0)]),
                              Scenario(f"{name} burst 2", [_reply(0, assistant_gap), announcement])]}

    phases = {"continuous": burst("continuous", 2.0, 0.0), "fcfs": burst("fcfs", 1.0, 1.0)}
    by_kind = bursts_by_kind(phases)
    assert (household(phases)["playback"]["burst of 2 rooms"]["underrun_s_per_request"]
            == household(phases)["fcfs"]["burst of 2 rooms"]["underrun_s_per_request"])
    assert by_kind["playback"]["burst of 2 rooms"]["announce"]["underrun_s_per_request"] == 0.0
    assert by_kind["fcfs"]["burst of 2 rooms"]["assistant"]["underrun_s_per_request"] == 1.0
    assert "one room" not in by_kind["playback"]
    rows = {tuple(cell.strip() for cell in line.split("|")[1:3]): line for line in bursts_by_kind_table(by_kind)}
    assert "| 2.00 / 2.00 · 1.00 / 1.00 |" in rows[("burst of 2 rooms", "assistant")]
    assert "| 1 / 1 · 0 / 1 |" in rows[("burst of 2 rooms", "announce")]


def test_a_room_made_slower_than_real_time_is_not_held_to_zero_gaps():
    phases = {"continuous": _phase("continuous", 0.0, 1.4)}
    met = {t["measure"]: t for t in targets(phases, {}, {}, household(phases))}
    one = met["underrun seconds per reply, one room alone"]
    assert one["met"] is None and "RTF 1.40" in one["note"]


def test_the_policies_alternate_a_b_a_b():
    assert alternation(2, ["continuous", "fcfs"]) == [(1, "continuous"), (1, "fcfs"), (2, "continuous"), (2, "fcfs")]
    assert alternation(1, ["continuous"]) == [(1, "continuous")]


def test_playback_and_fcfs_take_turns_in_one_sitting(tmp_path):
    """Each scenario runs on the playback server, then FCFS, then again (both servers up), where the run once did the
    whole playback half first; the report pools the rounds and ends with its summary."""
    out = tmp_path / "report"
    assert bench.main(["--quick", "--rooms", "1", "--static-rooms", "", "--serial-rooms", "", "--poisson-requests",
                       "0", "--probes", "0", "--skip-engine", "--rounds", "2", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    ran = sorted((s["extra"]["sequence"], s["name"], s["extra"]["round"]) for p in report["phases"].values()
                 for s in p["scenarios"])
    assert [(name, round_) for _, name, round_ in ran] == [
        ("continuous burst 1", 1), ("fcfs burst 1", 1), ("continuous burst 1", 2), ("fcfs burst 1", 2)]
    assert report["household"]["playback"]["one room"]["requests"] == 2  # pooled over the rounds
    assert report["phases"]["continuous"]["sweep"][0]["requests"] == 2
    text = (out / "report.md").read_text()
    summary = text[text.index("## Summary"):]
    assert "ISA" in summary and "| 40 | first sound, one room" in summary


def _timed(start: float, end: float, audio_s: float) -> Outcome:
    return Outcome("announce", "oneshot", 0, 10, start, ttfa_s=0.2, end_s=end, audio_s=audio_s)


def test_rounds_pool_audio_over_their_wall_time_added_up():
    # Round 1: 4 s of audio in 2 s; round 2 (on its own clock, from 100 s): 2 s of audio in 2 s.
    one = Scenario("x", [_timed(0.0, 2.0, 3.0), _timed(1.0, 2.0, 1.0)])
    two = Scenario("x", [_timed(100.0, 102.0, 2.0)])
    pooled_figures = summarise(pooled([one, two]))
    assert pooled_figures["audio_s_per_wall_s"] == pytest.approx(6.0 / 4.0)
    assert pooled_figures["requests"] == 3
    assert sorted(o.rtf for o in pooled([one, two]).outcomes) == pytest.approx(sorted([2 / 3, 1.0, 1.0]))


def _form(label: str, weights: str, rtf: float, talker_1: float, codec: float) -> dict:
    return {"label": label, "weights": weights, "one_room_rtf": rtf, "rooms_held": 3 if weights == "int4" else None,
            "engine": {"codec_ms_per_audio_s": codec, "stages": [
                {"batch": 1, "talker_ms": talker_1, "code_predictor_sampling_ms": 60.0, "step_ms": 100.0},
                {"batch": 4, "talker_ms": 70.0, "code_predictor_sampling_ms": 90.0, "step_ms": 170.0},
                {"batch": 8, "talker_ms": 80.0, "code_predictor_sampling_ms": 100.0, "step_ms": 160.0}]},
            "floors": {"1": {"talker": 20.0, "code_predictor": 40.0}, "4": {"talker": 35.0, "code_predictor": 45.0}},
            "codec_floor_ms": 50.0}


def test_each_stage_is_set_against_its_floor_at_batch_1_and_the_running_batch():
    rows = {(r["stage"], r["batch"]): r["x"] for r in stage_rows(_form("int4", "int4", 0.5, 25.0, 80.0), 4)}
    assert rows == pytest.approx({("talker", 1): 1.25, ("code predictor + sampling", 1): 1.5, ("talker", 4): 2.0,
                                  ("code predictor + sampling", 4): 2.0, ("codec (ms per audio s)", None): 1.6})


def test_issue_37_targets_follow_the_cpu_row_and_the_format():
    forms = [_form("talker int4, code predictor int8", "int4", 0.55, 25.0, 80.0), _form("f16", "f16", 1.9, 30.0, 120)]
    zen4 = {t["measure"]: t["met"] for t in issue_37_targets(forms, ["avx512f", "avx512_bf16"])}
    amx = {t["measure"]: t["met"] for t in issue_37_targets(forms, ["avx512_bf16", "amx_bf16"])}
    one = "one room end to end, RTF p50 (talker int4, code predictor int8)"
    assert zen4[one] is True and amx[one] is False  # <= 0.6 on Zen 4, <= 0.5 with AMX
    assert zen4["rooms held in real time, zero underruns (talker int4, code predictor int8)"] is True  # 3 >= 3
    assert amx["rooms held in real time, zero underruns (talker int4, code predictor int8)"] is False  # 3 < 4
    assert zen4["talker at batch 1 vs its floor (talker int4, code predictor int8)"] is True  # 1.25x <= 1.3x
    assert zen4["code predictor + sampling at batch 1 vs its floor (f16)"] is False  # 1.5x
    assert zen4["frame at batch 8 vs batch 1 (f16)"] is False and amx["frame at batch 8 vs batch 1 (f16)"] is False
    assert zen4["codec, ms per audio second (f16)"] is False and amx["codec, ms per audio second (f16)"] is False
    assert not any("RTF" in m and "(f16)" in m for m in zen4)  # no RTF target for f16


def test_the_summary_says_every_target_plainly():
    header = {"cpu": "AMD EPYC", "isa": ["avx2", "avx512f", "avx512_bf16"], "isa_flags": ["avx512_bf16"]}
    issue_40 = [{"issue": 40, "measure": "first sound, one room", "value": 0.4, "unit": "s", "target": "<= 0.6 s",
                 "met": True, "note": None}]
    lines = summary_lines(header, [{**_form("int8", "int8", 1.37, 25.0, 180.0), "rooms_held": 1}], 4,
                          {"playback": 2, "fcfs": 1},
                          issue_40, [{"name": "peer", "one_stream": {"rtf": 2.0}}])
    text = "\n".join(lines)
    assert "ISA avx2 avx512f avx512_bf16" in text and "Zen 4 / AVX-512 bf16 row" in text
    assert "int8 1.37" in text and "playback 2 · fcfs 1" in text and "peer 2.00" in text
    assert "| 37 | one room end to end, RTF p50 (int8) | 1.37 | <= 0.8 | **missed** |" in text
    assert "| 37 | codec, ms per audio second (int8) | 180 ms | <= 100 ms | **missed** |" in text
    assert "| 40 | first sound, one room | 0.400 s | <= 0.6 s | met |" in text
    assert "| 37 | rooms held in real time, zero underruns (int8) | 1 | >= 2 | **missed** |" in text
    assert "| int8 | talker | 4 | 70.0 | 35.0 | 2.00x |" in text


def test_the_playback_server_alone_and_each_model_of_a_comma_list(tmp_path):
    """An A/B between two builds runs the playback server alone: no FCFS server and, with --probes 0, no
    announcement-under-readers scenario (its readers would otherwise run for nothing); the report is still written.
    --model a,b: the engine level (stages against their floors) and one room through a server for each; the
    household part on the first alone. (One run for both: a run of bench.py is the costly part.)"""
    from wyoming_chorus.export.builtin import resolve_model

    tiny = resolve_model("builtin:tiny")
    out = tmp_path / "report"
    assert bench.main(["--quick", "--model", f"{tiny},{tiny}", "--rooms", "1", "--static-rooms", "", "--serial-rooms",
                       "", "--poisson-requests", "0", "--probes", "0", "--skip-fcfs", "--rounds", "1",
                       "--engine-batches", "1", "--engine-steps", "2", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert list(report["phases"]) == ["continuous"]
    scenarios = [s["name"] for s in report["phases"]["continuous"]["scenarios"]]
    assert scenarios == ["continuous burst 1"], scenarios
    text = (out / "report.md").read_text()
    assert text.count("| 1 |") >= 1
    assert "## What a household hears (Home Assistant 2026.11)" in text
    one_room = report["household"]["playback"]["one room"]
    assert one_room["requests"] == 1 and one_room["first_sound_p50_s"] > 0
    forms = report["formats"]
    assert len(forms) == 2 and all(f["one_room_rtf"] > 0 for f in forms)
    assert all(f["floors"]["1"]["talker"] > 0 and f["engine"]["stages"][0]["talker_ms"] > 0 for f in forms)
    assert list(report["one_room_servers"]) == ["one-room-1"]
    assert forms[0]["rooms_held"] is not None and forms[1]["rooms_held"] is None
    summary = text.split("## Summary")[1]
    assert summary.count("| talker | 1 |") == 2
