"""tools/bench.py's figures from a run: the machine, the targets met, rooms held in real time, the peers' file, and
the report's number formatting."""
from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

from chorus_tools.bench.workloads import Scenario
from chorus_tools.models import served_codec


def fmt(value, digits: int = 2, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def machine(directory: Path, kv: str, inference_hint: str = "") -> dict:
    """The report's header. `inference_hint`: engine.inference_precision of the run; an ONEDNN_MAX_CPU_ISA limit in
    the environment (which the servers inherit) is recorded too: such a run is \"AVX2-limited\", not AVX2."""
    import openvino

    from wyoming_chorus.cpu import cpu_facts
    from wyoming_chorus.lm_precision import COMPRESSED, lm_precision
    from wyoming_chorus.modeldir.manifest import ModelDir
    from wyoming_chorus.native_module import _native

    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags_line = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    manifest = ModelDir(directory).manifest
    try:  # the talker and code predictor may compute in another precision than the plugin's default (the codec's)
        facts = cpu_facts()
        plugin = facts.inference_precision(inference_hint)
        lm = facts.inference_precision(lm_precision(inference_hint, manifest.weights, "CPU", facts).hint)
        # The codec as the server serves it (engine.codec_precision auto: the INT8 twin where its audio passes).
        codec = served_codec(Path(directory), inference_hint or "").precision
        inference = plugin if lm == plugin == codec else f"{lm} (talker, code predictor), {codec} (codec)"
        # engine.native_matmul as the servers leave it (on): where it applies (native/compressed_matmul.hpp).
        native = _native.native_matmul_available() and manifest.weights in COMPRESSED and lm == "f32"
        builds = {"avx512": "VNNI (AVX-512)", "avxvnni": "AVX-VNNI", "avx2": "AVX2"}
        matmuls = f"the project's kernel, {builds.get(_native.matmul_isa(), 'its')} build" if native else "the plugin's"
    except Exception:  # noqa: BLE001  (a header detail, not a reason to fail)
        inference, matmuls = "device default", "unknown"
    return {
        "isa": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8") if f in flags],
        "isa_flags": sorted(flags & {"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}),
        "cpu": name.group(1).strip() if name else "unknown", "cores": os.cpu_count(),
        "model": f"{manifest.name} ({manifest.model_type})", "model_dir": str(directory),
        "random_weights": manifest.random_weights, "weights": manifest.weights_label, "kv_precision": kv,
        "inference_precision": inference, "compressed_matmuls": matmuls, "openvino": openvino.get_version(),
        "isa_limit": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def _gap_rows(phases: dict, heard: dict[str, dict[str, dict]]) -> list[tuple]:
    """Issue 40's targets, from what the Home Assistant 2026.11 listener model heard (chorus_tools/bench/household.py):
    rows of (measure, value, op, goal, unit, why it was not judged, issue)."""
    play, fcfs = heard.get("playback", {}), heard.get("fcfs", {})
    one = play.get("one room", {})
    readers = phases.get("continuous", {}).get("contention", {}).get("readers", 7)
    busy = [play.get(f"announcement, {readers} rooms {how}", {}) for how in ("reading", "playing")]
    bursts = [label for label in play if label in fcfs and label != "announcement alone"
              and not label.startswith(("announcement,", "the "))]
    held_play, held_fcfs = (sum(h[label]["held"] for label in bursts) if bursts else None for h in (play, fcfs))
    common = sorted(int(label.split()[2]) for label in bursts if label.startswith("burst of "))
    most = 16 if 16 in common else (common[-1] if common else 16)
    at_most = [h.get(f"burst of {most} rooms", {}).get("audio_s_per_wall_s") for h in (play, fcfs)]
    one_rtf = next((r.get("rtf_p50") for r in phases.get("continuous", {}).get("sweep", []) if r["rooms"] == 1), None)
    return [
        ("first sound, one room, through Home Assistant 2026.11's conversion (p50)",
         one.get("first_sound_p50_s"), "<=", 0.6, "s", None, 40),
        ("underrun seconds per reply, one room alone", one.get("underrun_s_per_request"), "<=", 0.0, "s",
         f"one room's RTF {one_rtf:.2f} >= 1" if one_rtf is not None and one_rtf >= 1 else None, 40),
        (f"replies held with zero underruns, playback vs FCFS ({', '.join(bursts) or 'no common scenario'}: "
         f"{held_play} vs {held_fcfs})", ratio(held_play, held_fcfs), ">=", 1.5, "x",
         "FCFS held none" if held_fcfs == 0 and held_play else None, 40),
        (f"announcement's underrun seconds per reply while {readers} rooms read / play (the worse)",
         max((b["underrun_s_per_request"] for b in busy if b.get("underrun_s_per_request") is not None),
             default=None), "<=", 0.0, "s", None, 40),
        (f"aggregate audio per second, playback vs FCFS, burst of {most} rooms", ratio(*at_most), ">=", 0.9, "x",
         None, 40),
    ]


def targets(phases: dict, engine: dict, kv: dict, heard: dict[str, dict[str, dict]] | None = None) -> list[dict]:
    """Every target the report checks; `heard`: chorus_tools/bench/household.household(phases)."""
    cont, stat = phases.get("continuous", {}), phases.get("static", {})
    sweep = {r["rooms"]: r for r in cont.get("sweep", [])}
    c = cont.get("contention", {})
    pool = kv.get("at_pool", {}).get("held", {})
    bpt = engine.get("kv_bytes_per_token", {})
    at16 = next((s for s in engine.get("stages", []) if s["batch"] == 16), None)
    rows = [
        ("p95 time to first audio, continuous vs static (mixed, Poisson arrivals)",
         ratio(cont.get("poisson", {}).get("ttfa_p95_s"), stat.get("poisson", {}).get("ttfa_p95_s")), "<=", 0.5, "x",
         None),
        ("p95 time to first audio, 8 rooms vs 1 room (mixed burst, continuous)",
         ratio(sweep.get(8, {}).get("ttfa_p95_s"), sweep.get(1, {}).get("ttfa_p95_s")), "<=", 2.0, "x", None),
        (f"announcement's time to first audio while {c.get('readers', 7)} rooms read long texts vs alone (medians)",
         ratio(c.get("busy_median_s"), c.get("alone_median_s")), "<=", 1.3, "x", None, 40),
        (f"the same, first audio, while {c.get('readers', 7)} rooms play theirs (each 5 s into its reply)",
         ratio(c.get("playing_median_s"), c.get("alone_median_s")), "<=", 1.3, "x", None, 40),
        *_gap_rows(phases, heard or {}),
        ("rooms held at the server's KV pool, paged vs 1024-token buckets",
         ratio(pool.get("paged"), pool.get("bucket 1024")), ">=", 2.5, "x", None),
        ("KV bytes per token, u8 vs f16", ratio(bpt.get("u8"), bpt.get("f16")), "<=", 0.6, "x", None),
        ("scheduler host overhead per step at batch 16 (host ms / step ms)",
         at16["host_share"] if at16 else None, "<=", 0.05, "%", None),
    ]
    out = []
    for name, value, op, goal, unit, not_judged, *issue in rows:
        met = None if value is None or not_judged else (value <= goal if op == "<=" else value >= goal)
        if value is None and not_judged == "FCFS held none":
            met = True  # the playback server held some, FCFS none: any ratio
        goal_text = {"%": f"{op} {goal:.0%}", "s": f"{op} {goal:g} s" if goal else "0 s"}.get(unit, f"{op} {goal:g}x")
        out.append({"measure": name, "value": value, "target": goal_text, "unit": unit, "met": met,
                    "note": not_judged, "issue": issue[0] if issue else None})
    return out


def realtime_rooms(sweep: list[dict], scenarios: list[Scenario]) -> int:
    """The largest N of the mixed burst at which every request's RTF was below 1 (cut read-outs: over the part they
    ran) with no error: every room heard its reply at least as fast as it plays."""
    best = 0
    for r in sweep:
        outcomes = [o for s in scenarios if s.name == f"continuous burst {r['rooms']}" for o in s.outcomes]  # rounds
        if not outcomes or r["errors"]:
            continue
        rtfs = [o.rtf for o in outcomes if o.rtf is not None]
        if rtfs and len(rtfs) == len(outcomes) and max(rtfs) < 1:
            best = max(best, r["rooms"])
    return best


def load_peers(path: str | None) -> list[dict]:
    if not path:
        return []
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(raw, dict) and isinstance(raw.get("peers"), list):  # tools/bench_peers.py --json
        raw = raw["peers"]
    elif isinstance(raw, dict):
        raw = [raw] if "name" in raw else [{"name": k, **v} for k, v in raw.items() if isinstance(v, dict)]
    return [p for p in raw if isinstance(p, dict)]


def to_json(phases: dict) -> dict:
    return {n: {k: ([s.to_json() for s in v] if k == "scenarios" else v) for k, v in p.items() if k != "texts"}
            for n, p in phases.items()}
