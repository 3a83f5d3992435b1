"""The end of tools/bench.py's report, in plain words (issue 37 item 5): the CPU, one room's RTF end to end through the
server and the rooms held with no gap, each stage against its floor at batch 1 and at the running batch per format,
the peers of the same sitting, and every target of issues 37 and 40, met or missed. Arithmetic on figures the run
measured (fed in as dicts), so that it is tested without a run."""
from __future__ import annotations

from chorus_tools.bench.figures import fmt, ratio

# Issue 37's targets by CPU row: one room's RTF, rooms held (by weight format), each stage at batch 1 vs its floor,
# a frame at batch 8 vs batch 1, the codec's ms per audio second. AVX2 has no row of its own: the issue says the
# nearest row applies, and that is Zen 4's (AVX-512 bf16 without AMX).
ISSUE_37 = {
    "AMX": {"rtf": {"int8": 0.7, "int4": 0.5}, "rooms": {"int8": 3, "int4": 4}, "floor_x": 1.3, "batch8_x": 1.3,
            "codec_ms": 50.0},
    "Zen 4 / AVX-512 bf16": {"rtf": {"int8": 0.8, "int4": 0.6}, "rooms": {"int8": 2, "int4": 3}, "floor_x": 1.3,
                             "batch8_x": 1.5, "codec_ms": 100.0},
}
STAGES = (("talker", "talker_ms"), ("code predictor + sampling", "code_predictor_sampling_ms"))


def cpu_row(isa_flags: list[str] | set[str]) -> str:
    return "AMX" if "amx_bf16" in isa_flags else "Zen 4 / AVX-512 bf16"


def stage_rows(form: dict, running_batch: int) -> list[dict]:
    """Each stage of one format at batch 1 and at the running batch: measured ms, floor ms, measured / floor. `form`:
    {"engine": {"stages": [...]} , "floors": {"<batch>": {"talker": ms, "code_predictor": ms}}}."""
    stages = {s["batch"]: s for s in form.get("engine", {}).get("stages", [])}
    rows = []
    for batch in dict.fromkeys((1, running_batch)):
        floors = form.get("floors", {}).get(str(batch), {})
        for stage, key in STAGES:
            measured = stages.get(batch, {}).get(key)
            floor = floors.get("talker" if stage == "talker" else "code_predictor")
            rows.append({"batch": batch, "stage": stage, "ms": measured, "floor_ms": floor,
                         "x": ratio(measured, floor)})
    codec = form.get("engine", {}).get("codec_ms_per_audio_s")
    rows.append({"batch": None, "stage": "codec (ms per audio s)", "ms": codec, "floor_ms": form.get("codec_floor_ms"),
                 "x": ratio(codec, form.get("codec_floor_ms"))})
    return rows


def _judge(value, op: str, goal: float) -> bool | None:
    return None if value is None else (value <= goal if op == "<=" else value >= goal)


def issue_37_targets(forms: list[dict], isa_flags: list[str] | set[str]) -> list[dict]:
    """Each target of issue 37's row for this CPU, per format. A format without a target (f16, f32) is left out of
    the RTF and rooms rows; rooms held is measured on the first format only (the household part runs on it)."""
    goals, out = ISSUE_37[cpu_row(isa_flags)], []

    def add(measure: str, value, op: str, goal: float, unit: str) -> None:
        shown = {"x": f"{op} {goal:g}x", "ms": f"{op} {goal:g} ms", "": f"{op} {goal:g}"}[unit]
        out.append({"issue": 37, "measure": measure, "value": value, "unit": unit, "target": shown,
                    "met": _judge(value, op, goal)})

    for form in forms:
        label, weights = form["label"], form.get("weights", "")
        if weights in goals["rtf"]:
            add(f"one room end to end, RTF p50 ({label})", form.get("one_room_rtf"), "<=", goals["rtf"][weights], "")
            if form.get("rooms_held") is not None:
                add(f"rooms held in real time, zero underruns ({label})", form["rooms_held"], ">=",
                    goals["rooms"][weights], "")
        stages = {s["batch"]: s for s in form.get("engine", {}).get("stages", [])}
        for row in stage_rows(form, 1):
            if row["batch"] == 1:
                add(f"{row['stage']} at batch 1 vs its floor ({label})", row["x"], "<=", goals["floor_x"], "x")
        add(f"frame at batch 8 vs batch 1 ({label})", ratio(stages.get(8, {}).get("step_ms"),
                                                            stages.get(1, {}).get("step_ms")),
            "<=", goals["batch8_x"], "x")
        add(f"codec, ms per audio second ({label})", form.get("engine", {}).get("codec_ms_per_audio_s"), "<=",
            goals["codec_ms"], "ms")
    return out


def _value(t: dict) -> str:
    v = t["value"]
    if v is None:
        return "n/a"
    if isinstance(v, int):  # rooms
        return str(v)
    return {"%": f"{v:.1%}", "s": f"{v:.3f} s", "x": f"{v:.2f}x", "ms": f"{v:.0f} ms"}.get(t["unit"], f"{v:.2f}")


def summary_lines(header: dict, forms: list[dict], running_batch: int, heard_rooms: dict[str, int],
                  issue_40: list[dict], peers: list[dict]) -> list[str]:
    """The report's "Summary" block (also printed at the end of the run). `heard_rooms`: rooms held with zero
    underruns per policy; `issue_40`: figures.targets() rows of issue 40; `peers`: the --peers file's entries."""
    lines = ["## Summary", "",
             f"- **CPU**: {header['cpu']}, ISA {' '.join(header['isa']) or 'unknown'}"
             + (f" (limited: ONEDNN_MAX_CPU_ISA={header['isa_limit']})" if header.get("isa_limit") else "")
             + f"; issue 37's targets of the {cpu_row(header.get('isa_flags', []))} row apply.",
             "- **One room, end to end through the server** (RTF p50, the one-room scenario pooled over its rounds): "
             + " · ".join(f"{f['label']} {fmt(f.get('one_room_rtf'))}" for f in forms) + ".",
             f"- **Rooms held in real time** (the largest burst with zero underruns through Home Assistant 2026.11, "
             f"{forms[0]['label'] if forms else '-'}): "
             + " · ".join(f"{policy} {n}" for policy, n in heard_rooms.items()) + ".",
             f"- **Each stage against its floor** (ms measured / floor; the running batch {running_batch}: the mean "
             "batch the playback server ran at its largest burst):", "",
             "| format | stage | batch | measured (ms) | floor (ms) | x floor |", "|---|---|---:|---:|---:|---:|"]
    for form in forms:
        for r in stage_rows(form, running_batch):
            lines.append(f"| {form['label']} | {r['stage']} | {r['batch'] or '-'} | {fmt(r['ms'], 1)} | "
                         f"{fmt(r['floor_ms'], 1)} | {fmt(r['x'], unit='x')} |")
    lines.append("")
    if peers:
        ours = forms[0].get("one_room_rtf") if forms else None
        lines += ["- **Peers** (one stream RTF; --peers: tools/bench_peers.py --json, run in the same sitting): ours "
                  + fmt(ours) + "; "
                  + ", ".join(f"{p.get('name', '?')} {fmt((p.get('one_stream') or {}).get('rtf'))}" for p in peers),
                  ""]
    lines += ["| issue | target | value | goal | met |", "|---:|---|---:|---|---|"]
    for t in [*issue_37_targets(forms, header.get("isa_flags", [])), *issue_40]:
        met = t.get("note") or {True: "met", False: "**missed**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['issue']} | {t['measure']} | {_value(t)} | {t['target']} | {met} |")
    return lines + [""]
