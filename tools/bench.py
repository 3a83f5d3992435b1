#!/usr/bin/env python3
"""End-to-end benchmark: the real wyoming-chorus server under many rooms, its baselines, and the engine beneath it, in
one run on this machine. Writes report.md, report.json and PNG plots.

    python tools/bench.py --quick                     # builtin:tiny, a couple of rooms: proves the script (CI)
    python tools/bench.py                             # 0.6b preset, random weights at real dims, f16 (~25-45 min)
    python tools/bench.py --model DIR | --preset 0.6b [--weights int8] [--out bench-report/] [--peers peers.json]
    python tools/bench.py --model INT8_DIR,INT4_DIR   # per-format rows (engine level, one room) in the summary

What is measured, and how:
- The server is the real one: `wyoming-chorus` started as a subprocess on free loopback ports with a temporary
  config.yaml (engine.benchmark_frames_per_word 5: a random model's reply ends after 5 frames per word, i.e.
  12.5 frames/s at 2.5 words/s; a fixed seed). Clients are the `wyoming` library over TCP, one connection per request.
- Workloads (chorus_tools/bench/workloads.py): announcements (5-15 words, one-shot), assistant replies (30-60 words,
  streamed in small deltas as Home Assistant sends an LLM's reply), read-outs (200+ words, one-shot). A mixed burst of
  N rooms (N = 1, 2, 4, 8, 16) arriving at once; mixed Poisson arrivals at a mean rate (by default 70% of the capacity
  the burst sweep measured); one short announcement while 7 rooms read long texts, against the same alone. Read-outs
  still running when every other request of a scenario has ended are cut there (their RTF is then over the part they
  ran): running them to their end would take minutes per scenario at 0.6b on two cores (`--full-readouts`).
- Per request (client side): time to first audio (first text sent -> first audio-chunk), RTF = wall time from the first
  text to the last audio / seconds of audio; and what its household hears through Home Assistant 2026.11
  (chorus_tools/bench/listener.py: playback from the first chunk, ~0.1 s later, then at 1x): the first sound, every
  gap (underrun seconds), whether a satellite gave up (no sound 2 s after the request). Per scenario (one room, a
  burst of rooms, Poisson arrivals, an announcement under readers), the playback policy against FCFS alternated
  A-B-A-B in one sitting, both servers up, `--rounds` rounds (chorus_tools/bench/alternate.py), pooled over the rounds
  (chorus_tools/bench/household.py): first sound, underrun seconds per reply, replies held with no gap. Also per
  scenario: aggregate audio seconds per wall second, errors; from the server's /metrics (before/after deltas, gauges
  sampled every 0.5 s): mean step time and batch size, frames, preemptions, peak KV blocks used; peak RSS of the
  server process (VmHWM in /proc/PID/status).
- Baselines, each its own server after the A-B-A-B part: engine.policy static (a batch is admitted only into an empty
  engine), and engine.max_batch 1 (one request at a time).
- Engine level (in this process, after the servers are gone; chorus_tools/engine_bench.py): step time by stage at
  batch 1, 8 and 16 (talker alone; code predictor + sampling = native frame - talker; host = the scheduler's
  schedule()+update() plus the runner's Python wrapper, i.e. step wall time minus the native runner's time, timed
  around real runner steps), codec ms per audio second, KV bytes per token (u8, f16), step time at batch 8 with u8 vs
  f16 KV, and the KV tokens each request of the run really needs (prompt rows + frames, from the server's own
  RequestBuilder and sentence splitter), from which rooms held at a fixed KV budget are computed for paged blocks vs
  fixed buckets of 128/256/512/1024 tokens reserved up front. Also at the running batch (the playback server's mean
  batch at its largest burst).
- The end, "Summary" (report.md and printed; chorus_tools/bench/verdict.py): the CPU ISA, one room's RTF end to end,
  rooms held with zero underruns, each stage against its floor (chorus_tools/floors.py, as tools/bench_floor.py) at
  batch 1 and the running batch per format, the peers, and every target of issues 37 and 40, met or missed.
Figures come from one run on a shared machine: compare medians and ratios, not absolutes.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("CI", "true")  # OpenVINO telemetry off, here and in the server (it inherits the environment)

from chorus_tools.bench.alternate import alternate  # noqa: E402
from chorus_tools.bench.engine_level import engine_phase  # noqa: E402
from chorus_tools.bench.figures import load_peers, machine, targets, to_json  # noqa: E402
from chorus_tools.bench.formats import floors_of, labels, one_room, running_batch  # noqa: E402
from chorus_tools.bench.household import bursts_by_kind, gap_free_rooms, household  # noqa: E402
from chorus_tools.bench.kv import kv_analysis  # noqa: E402
from chorus_tools.bench.phases import baselines, capacity_rate  # noqa: E402
from chorus_tools.bench.plan import BENCH_SEED, log, make_plan  # noqa: E402
from chorus_tools.bench.report import write_report  # noqa: E402
from chorus_tools.bench.verdict import summary_lines  # noqa: E402
from chorus_tools.bench.workloads import ClientSettings, burst_specs  # noqa: E402
from chorus_tools.models import preset_model  # noqa: E402
from wyoming_chorus.modeldir.manifest import ModelDir  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


# ---- the model ------------------------------------------------------------------------------------------------------

def model_dirs(args) -> list[Path]:
    """`--model a,b`: each; else the preset (or builtin:tiny with --quick)."""
    if args.model:
        return [Path(m).expanduser().resolve() for m in args.model.split(",") if m.strip()]
    return [model_dir(args)]


def model_dir(args) -> Path:
    from wyoming_chorus.export.builtin import resolve_model

    if args.quick:
        return resolve_model("builtin:tiny")
    cache = Path(args.cache).expanduser().resolve()
    if not (cache / args.preset / "chorus.json").exists():
        log(f"building the {args.preset} preset into {cache / args.preset} (once; random weights at real dimensions)")
    base = preset_model(cache, args.preset)
    if args.weights == "f16":
        return base
    compressed = cache / f"{args.preset}-{args.weights}"
    if not (compressed / "chorus.json").exists():
        from wyoming_chorus.export.compress import compress_model_dir

        log(f"compressing {base} to {args.weights} weights into {compressed} (once)")
        staging = compressed.with_name(compressed.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(base, staging)
        compress_model_dir(staging, args.weights)
        staging.rename(compressed)
    return compressed

# ---- main ------------------------------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="builtin:tiny, a couple of rooms, seconds (CI)")
    p.add_argument("--model", help="an existing model directory (overrides --preset), or a comma list of them (e.g. "
                   "an int8 and an int4 export): each gets the engine level and one room in the summary, the household "
                   "part runs on the first")
    p.add_argument("--preset", default="0.6b", choices=["0.6b", "1.7b"])
    p.add_argument("--weights", default="f16", choices=["f16", "int8", "int4"],
                   help="weights of the preset (int8/int4: compressed once with NNCF into the cache)")
    p.add_argument("--cache", default=str(REPO / "models"), help="where presets are built once and reused")
    p.add_argument("--out", default="bench-report", help="folder for report.md, report.json and the plots")
    p.add_argument("--peers", help="JSON file of peer results to compare against")
    p.add_argument("--rooms", help="rooms of the continuous burst sweep (default 1,2,4,8,16; quick 1,2)")
    p.add_argument("--static-rooms", help="rooms of the static-batching sweep (default 1,4,8)")
    p.add_argument("--serial-rooms", help="rooms of the max_batch 1 sweep (default 1,4)")
    p.add_argument("--poisson-requests", type=int, help="requests of the Poisson run (default 10; quick 4)")
    p.add_argument("--rate", type=float,
                   help="Poisson mean arrivals per second (default: --load x measured capacity; quick 1)")
    p.add_argument("--load", type=float, default=0.7, help="Poisson load as a fraction of the measured capacity")
    p.add_argument("--readers", type=int, help="rooms reading long texts against the announcement (default 7)")
    p.add_argument("--probes", type=int, help="announcements alone and under contention (default 3; 0 leaves it out)")
    p.add_argument("--readout-words", type=int, default=200, help="least words of a read-out")
    p.add_argument("--mode", default="ha", choices=["ha", "stream", "oneshot"],
                   help="ha: assistant replies streamed, the rest one-shot (as Home Assistant sends them)")
    p.add_argument("--full-readouts", action="store_true", help="run read-outs to their end instead of cutting them")
    p.add_argument("--engine-batches", help="batch sizes of the engine-level stage timings (default 1,8,16)")
    p.add_argument("--engine-steps", type=int, help="steps per engine-level measurement (default 8; quick 4)")
    p.add_argument("--context", type=int, help="prompt rows per request at engine level (default 128; quick 32)")
    p.add_argument("--timeout", type=float, help="seconds per request before it counts as failed")
    p.add_argument("--start-timeout", type=float, help="seconds for a server to load and compile")
    p.add_argument("--rounds", type=int, default=2,
                   help="A-B-A-B rounds of the household scenarios on the playback and FCFS servers (default 2)")
    p.add_argument("--skip-engine", action="store_true", help="leave out the engine-level measurements")
    p.add_argument("--skip-fcfs", action="store_true",
                   help="leave out the FCFS server: with --static-rooms \"\" --serial-rooms \"\", the playback server "
                        "alone (an A/B of two builds in half the time)")
    p.add_argument("--inference-precision", default="", choices=["", "f32", "bf16", "f16"],
                   help="engine.inference_precision of every server and the engine level (default: the plugin's); "
                        "f32 with ONEDNN_MAX_CPU_ISA=AVX2 in the environment is the AVX2-limited run")
    return p.parse_args(argv)


async def servers(directories: list[Path], labels: list[str], plan, scratch: Path, client) -> tuple[dict, dict]:
    """The playback and FCFS servers A-B-A-B and the baselines on the first model; one room on each other one."""
    phases = await alternate(directories[0], plan, scratch, client)
    phases.update(await baselines(directories[0], plan, scratch, client,
                                  phases["continuous"].get("rate") or capacity_rate({}, plan)))
    rooms = {f"one-room-{i}": {**await one_room(f"one-room-{i}", d, plan, scratch, client), "label": labels[i]}
             for i, d in enumerate(directories) if i}
    return phases, rooms


def engine_levels(directories: list[Path], labels: list[str], plan, phases: dict, isa_flags: set[str],
                  quick: bool, skip: bool) -> list[dict]:
    """Each model's engine level with its stages' floors: the summary's per-format rows (`skip`: without them)."""
    from chorus_tools.floors import measure_machine

    forms = [{"label": label, "dir": str(d), "weights": ModelDir(d).manifest.weights}
             for d, label in zip(directories, labels, strict=True)]
    if skip:
        return forms
    texts = [t for n in ("continuous", "static") for t in phases.get(n, {}).get("texts", [])]
    if not texts:  # no server ran: the workloads the run would have sent
        texts = [(s.kind, s.text) for n in plan.rooms for s in burst_specs(n, BENCH_SEED, plan.mode,
                                                                          plan.readout_words)]
    log("engine level: this machine's bandwidth and arithmetic rates (the floors)")
    machine = measure_machine((8,) if quick else None)
    for form in forms:
        try:
            form["engine"] = engine_phase(Path(form["dir"]), plan, texts, isa_flags)
            form.update(floors_of(Path(form["dir"]), plan.engine_batches, machine))
        except Exception as error:  # noqa: BLE001  (the server figures are still worth a report)
            form["engine"] = {"error": f"{type(error).__name__}: {error}"}
            log(f"engine level of {form['label']} failed: {form['engine']['error']}")
    return forms


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    plan = make_plan(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    peers = load_peers(args.peers)  # read first: a bad file must not cost a whole run
    directories = model_dirs(args)
    names = labels(directories)
    header = machine(directories[0], "u8", plan.inference_precision)
    log(f"model {directories[0]} ({header['weights']} weights), {header['cpu']}, ISA {' '.join(header['isa'])}")
    client = ClientSettings(timeout=plan.timeout, cut_readouts=not plan.full_readouts)
    scratch = Path(tempfile.mkdtemp(prefix="chorus-bench-"))
    phases, rooms = asyncio.run(servers(directories, names, plan, scratch, client))
    batch = running_batch(phases.get("continuous", {}).get("sweep", []))
    plan.engine_batches = sorted({*plan.engine_batches, 1, batch})  # each stage at batch 1 and the running batch
    forms = engine_levels(directories, names, plan, phases, set(header["isa_flags"]), args.quick, args.skip_engine)
    engine = forms[0].get("engine", {})
    pool = next((s.extra["server"].get("kv_blocks_total") for p in phases.values() for s in p.get("scenarios", [])
                 if s.extra.get("server", {}).get("kv_blocks_total")), None)
    kv = kv_analysis(engine, pool) if engine and not engine.get("error") else {}
    heard = household(phases)
    goals = targets(phases, engine, kv, heard)
    held = {policy: gap_free_rooms(rows) for policy, rows in heard.items()}
    for i, form in enumerate(forms):  # one room's RTF per format; rooms held on the first, where the household ran
        one = rooms[f"one-room-{i}"].get("one_room", {}) if i else next(
            (r for r in phases.get("continuous", {}).get("sweep", []) if r["rooms"] == 1), {})
        form.update(one_room_rtf=one.get("rtf_p50"), rooms_held=None if i else held.get("playback"))
    plain = summary_lines(header, forms, batch, held, [t for t in goals if t["issue"] == 40], peers)
    elapsed = time.monotonic() - started
    report = write_report(out, header, plan, phases, engine, kv, peers, elapsed, args, plain)
    (out / "report.json").write_text(json.dumps({
        "header": header, "plan": plan.__dict__, "phases": to_json(phases), "engine": engine, "kv": kv,
        "household": heard, "household_by_kind": bursts_by_kind(phases), "targets": goals, "formats": forms,
        "running_batch": batch,
        "one_room_servers": to_json(rooms), "peers": peers, "elapsed_s": elapsed}, indent=1, default=str))
    print("\n".join(plain), flush=True)
    log(f"wrote {report} (+ report.json, plots) in {elapsed:.0f} s")
    failed = [n for n, p in {**phases, **rooms}.items() if p.get("error")] + [
        f"engine ({f['label']})" for f in forms if f.get("engine", {}).get("error")]
    if failed:
        log(f"phases that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
