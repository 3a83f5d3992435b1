#!/usr/bin/env python3
"""End-to-end benchmark: the real wyoming-chorus server under many rooms, its baselines, and the engine beneath it, in
one run on this machine. Writes report.md, report.json and PNG plots.

    python scripts/bench.py --quick                     # builtin:tiny, a couple of rooms: proves the script (CI)
    python scripts/bench.py                             # 0.6b preset: random weights at real dims, f16 (~30 min)
    python scripts/bench.py --model DIR | --preset 0.6b [--weights int8] [--out bench-report/] [--peers peers.json]

What is measured, and how:
- The server is the real one: `wyoming-chorus` started as a subprocess on free loopback ports with a temporary
  config.yaml (engine.benchmark_frames_per_word 5: a random model's reply ends after 5 frames per word, i.e.
  12.5 frames/s at 2.5 words/s; a fixed seed). Clients are the `wyoming` library over TCP, one connection per request.
- Workloads (scripts/bench_workloads.py): announcements (5-15 words, one-shot), assistant replies (30-60 words,
  streamed in small deltas as Home Assistant sends an LLM's reply), read-outs (200+ words, one-shot). A mixed burst of
  N rooms (N = 1, 2, 4, 8, 16) arriving at once; mixed Poisson arrivals at a mean rate (by default 70% of the capacity
  the burst sweep measured); one short announcement while 7 rooms read long texts, against the same alone. Read-outs
  still running when every other request of a scenario has ended are cut there (their RTF is then over the part they
  ran): running them to their end would take minutes per scenario at 0.6b on two cores (`--full-readouts`).
- Per request (client side): time to first audio (first text sent -> first audio-chunk), RTF = wall time from the first
  text to the last audio / seconds of audio. Per scenario: aggregate audio seconds per wall second, errors; from the
  server's /metrics (before/after deltas, gauges sampled every 0.5 s): mean step time and batch size, frames,
  preemptions, peak KV blocks used; peak RSS of the server process (VmHWM in /proc/PID/status).
- Baselines, each its own server: engine.policy static (a batch is admitted only into an empty engine), and
  engine.max_batch 1 (one request at a time).
- Engine level (in this process, after the servers are gone; scripts/bench_engine.py's helpers): step time by stage at
  batch 1, 8 and 16 (talker alone; code predictor + sampling = the runner's frame - talker; host = messages,
  schedule(), update() and the stats snapshot, i.e. the wall time of a real engine step (EngineCore.step) minus the
  runner's), codec ms per audio second, KV bytes per token (u8, f16), step time at batch 8 with u8 vs
  f16 KV, and the KV tokens each request of the run really needs (prompt rows + frames, from the server's own
  RequestBuilder and sentence splitter), from which rooms held at a fixed KV budget are computed for paged blocks vs
  fixed buckets of 128/256/512/1024 tokens reserved up front.
Figures come from one run on a shared machine: compare medians and ratios, not absolutes.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("CI", "true")  # OpenVINO telemetry off, here and in the server (it inherits the environment)

import yaml  # noqa: E402
from bench_workloads import (  # noqa: E402
    ClientSettings,
    Scenario,
    burst_specs,
    contention,
    poisson_specs,
    run_specs,
    sample_metrics,
    summarise,
    word_count,
)
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from soak import free_port, http_get, stop_server, wait_ready  # noqa: E402

from service.config import default_config_path  # noqa: E402

HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[1]
FRAMES_PER_AUDIO_S = 12.5  # Qwen3-TTS 12 Hz codec: one frame = 1920 samples at 24 kHz = 80 ms
BUCKETS = (128, 256, 512, 1024)
LOOKAHEAD = 2  # service.wyoming.sentence_audio.LOOKAHEAD: sentences of one reply generating at once
BENCH_SEED = 1234


_T0 = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f} s] {message}", flush=True)


# ---- the plan -------------------------------------------------------------------------------------------------------

@dataclass
class Plan:
    rooms: list[int]
    static_rooms: list[int]
    serial_rooms: list[int]
    poisson_requests: int
    load: float
    rate: float | None
    readers: int
    probes: int
    engine_batches: list[int]
    engine_steps: int
    context: int
    timeout: float
    start_timeout: float
    full_readouts: bool
    mode: str
    readout_words: int
    weights_mix: dict[str, float] = field(default_factory=lambda: {"announce": 5, "assistant": 4, "readout": 1})


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def make_plan(args) -> Plan:
    quick = args.quick
    pick = (lambda flag, q, full: flag if flag is not None else (q if quick else full))  # noqa: E731
    return Plan(
        rooms=ints(pick(args.rooms, "1,2", "1,2,4,8,16")),
        static_rooms=ints(pick(args.static_rooms, "1,2", "1,4,8")),
        serial_rooms=ints(pick(args.serial_rooms, "1,2", "1,4")),
        poisson_requests=pick(args.poisson_requests, 4, 10),
        load=args.load, rate=args.rate,
        readers=pick(args.readers, 7, 7),
        probes=pick(args.probes, 2, 3),
        engine_batches=ints(pick(args.engine_batches, "1,8,16", "1,8,16")),
        engine_steps=pick(args.engine_steps, 4, 8),
        context=pick(args.context, 32, 128),
        timeout=pick(args.timeout, 60.0, 1500.0),
        start_timeout=pick(args.start_timeout, 120.0, 900.0),
        full_readouts=args.full_readouts or quick,  # the tiny model reads 200 words in seconds
        mode=args.mode,
        readout_words=args.readout_words,
    )


# ---- the model ------------------------------------------------------------------------------------------------------

def model_dir(args) -> Path:
    from service.export.builtin import resolve_model

    if args.model:
        return Path(args.model).expanduser().resolve()
    if args.quick:
        return resolve_model("builtin:tiny")
    cache = Path(args.cache).expanduser().resolve()
    base = cache / args.preset
    if not (base / "chorus.json").exists():
        log(f"building the {args.preset} preset into {base} (once; random weights at real dimensions)")
        subprocess.run([sys.executable, str(REPO / "scripts" / "make_model.py"), "--preset", args.preset,
                        "--out", str(base)], check=True)
    if args.weights == "f16":
        return base
    compressed = cache / f"{args.preset}-{args.weights}"
    if not (compressed / "chorus.json").exists():
        from service.export.compress import compress_model_dir

        log(f"compressing {base} to {args.weights} weights into {compressed} (once)")
        staging = compressed.with_name(compressed.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(base, staging)
        compress_model_dir(staging, args.weights)
        staging.rename(compressed)
    return compressed


# ---- the server -----------------------------------------------------------------------------------------------------

def parse_metrics(body: str) -> dict[str, float]:
    """Every sample by name, labels folded in: chorus_requests_total{status=ok}, chorus_step_seconds_sum, ..."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()) if k != "le")
            if "le" in sample.labels:
                continue  # histogram buckets: the sums and counts are enough here
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


def vm_hwm_mb(pid: int) -> float | None:
    """Peak resident set of a process (VmHWM), MB; psutil is no dependency."""
    try:
        found = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) / 1024 if found else None


class Server:
    """`wyoming-chorus` in a subprocess on free loopback ports, configured by a temporary config.yaml (the embedded one
    with `overrides` applied). Always stopped on exit (SIGTERM, then SIGKILL)."""

    def __init__(self, name: str, model: Path, overrides: dict, scratch: Path, start_timeout: float):
        self.name = name
        self.port, self.metrics_port = free_port(), free_port()
        self.log_path = scratch / f"server-{name}.log"
        raw = yaml.safe_load(default_config_path().read_text(encoding="utf-8"))
        raw["engine"].update({"model": str(model), "benchmark_frames_per_word": 5, "seed": BENCH_SEED,
                              **overrides})
        raw["metrics"].update({"address": HOST, "port": self.metrics_port})
        raw["server"]["uri"] = f"tcp://{HOST}:{self.port}"
        raw["zeroconf"]["enabled"] = False
        self.config = scratch / f"config-{name}.yaml"
        self.config.write_text(yaml.safe_dump(raw), encoding="utf-8")
        self.start_timeout = start_timeout
        self.process: subprocess.Popen | None = None
        self.peak_rss_mb: float | None = None

    def command(self) -> list[str]:
        installed = Path(sys.executable).with_name("wyoming-chorus")  # the console script of this environment
        program = [str(installed)] if installed.exists() else [sys.executable, "-m", "service"]
        return [*program, "--config", str(self.config), "--no-zeroconf"]

    async def __aenter__(self) -> Server:
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                            cwd=tempfile.gettempdir(), env={**os.environ, "CI": "true"})
        try:
            await wait_ready(self.process, self.metrics_port, self.start_timeout)
        except BaseException:
            stop_server(self.process)
            raise
        return self

    async def __aexit__(self, *exc) -> None:
        if self.process is not None:
            self.peak_rss_mb = vm_hwm_mb(self.process.pid)
            await asyncio.to_thread(stop_server, self.process)

    async def scrape(self) -> dict[str, float]:
        status, body = await http_get(self.metrics_port, "/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return parse_metrics(body)

    async def settle(self, timeout: float = 60.0) -> None:
        """Until every block is free and nothing runs or waits (cut requests are aborted at the next step)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            values = await self.scrape()
            if not (values.get("chorus_kv_blocks_used") or values.get("chorus_requests_running")
                    or values.get("chorus_requests_waiting")):
                return
            await asyncio.sleep(0.3)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def server_delta(before: dict, after: dict, peaks: dict) -> dict:
    def d(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    steps = d("chorus_step_seconds_count")
    statuses = {k.split("=")[1].rstrip("}"): d(k) for k in after if k.startswith("chorus_requests_total{")}
    return {
        "steps": steps,
        "step_ms_mean": 1000 * d("chorus_step_seconds_sum") / steps if steps else None,
        "batch_mean": d("chorus_batch_size_sum") / steps if steps else None,
        "frames": d("chorus_frames_total"),
        "preemptions": d("chorus_preemptions_total"),
        "requests_by_status": statuses,
        "kv_blocks_total": after.get("chorus_kv_blocks_total"),
        "kv_blocks_peak": peaks.get("chorus_kv_blocks_used"),
        "running_peak": peaks.get("chorus_requests_running"),
        "waiting_peak": peaks.get("chorus_requests_waiting"),
    }


async def measured(server: Server, run) -> Scenario:
    """Runs the scenario coroutine `run` with /metrics read before and after and its gauges sampled meanwhile."""
    await server.settle()
    before = await server.scrape()
    peaks: dict = {}
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_metrics(server.scrape, 0.5, peaks, stop))
    try:
        scenario = await run
    finally:
        stop.set()
        await sampler
    await server.settle()
    scenario.extra["server"] = server_delta(before, await server.scrape(), peaks)
    return scenario


# ---- phases against a server ----------------------------------------------------------------------------------------

def row(scenario: Scenario, **extra) -> dict:
    summary = summarise(scenario)
    summary.pop("rtfs")
    return {**extra, **summary, **{f"server_{k}": v for k, v in scenario.extra.get("server", {}).items()}}


async def sweep(server: Server, plan: Plan, rooms: list[int], client: ClientSettings, results: dict) -> None:
    for n in rooms:
        specs = burst_specs(n, BENCH_SEED, plan.mode, plan.readout_words)
        results["texts"] += [(s.kind, s.text) for s in specs]
        scenario = await measured(server, run_specs(f"{server.name} burst {n}", server.port, specs, client))
        results["scenarios"].append(scenario)
        results["sweep"].append(row(scenario, rooms=n))
        r = results["sweep"][-1]
        log(f"  {server.name} burst {n:>2} rooms: ttfa p50 {fmt(r['ttfa_p50_s'])} p95 {fmt(r['ttfa_p95_s'])} s, "
            f"audio/s {fmt(r['audio_s_per_wall_s'])}, errors {r['errors']}, wall {scenario.wall_s:.0f} s")


async def poisson(server: Server, plan: Plan, rate: float, client: ClientSettings, results: dict) -> None:
    specs = poisson_specs(plan.poisson_requests, rate, plan.weights_mix, BENCH_SEED, plan.mode, plan.readout_words)
    results["texts"] += [(s.kind, s.text) for s in specs]
    scenario = await measured(server, run_specs(f"{server.name} poisson", server.port, specs, client))
    scenario.extra["rate_per_s"] = rate
    results["scenarios"].append(scenario)
    results["poisson"] = row(scenario, rate_per_s=rate)
    r = results["poisson"]
    log(f"  {server.name} poisson ({plan.poisson_requests} requests at {rate:.3f}/s): ttfa p95 "
        f"{fmt(r['ttfa_p95_s'])} s, errors {r['errors']}, wall {scenario.wall_s:.0f} s")


async def contend(server: Server, plan: Plan, client: ClientSettings, results: dict) -> None:
    scenario = await measured(server, contention(server.port, plan.readers, plan.probes, BENCH_SEED,
                                                 plan.readout_words, client))
    results["scenarios"].append(scenario)
    alone = [o.ttfa_s for o in scenario.outcomes if o.kind == "announce (alone)" and o.ttfa_s is not None]
    busy = [o.ttfa_s for o in scenario.outcomes if o.kind.startswith("announce (") and o.kind != "announce (alone)"
            and o.ttfa_s is not None]
    readers = [o for o in scenario.outcomes if o.kind == "readout"]
    results["contention"] = {
        "readers": plan.readers, "readers_heard": scenario.extra.get("readers_heard"),
        "alone_ttfa_s": alone, "busy_ttfa_s": busy,
        "alone_median_s": statistics.median(alone) if alone else None,
        "busy_median_s": statistics.median(busy) if busy else None,
        "reader_errors": sum(o.error is not None for o in readers),
        "server": scenario.extra.get("server"),
    }
    c = results["contention"]
    log(f"  announcement alone {fmt(c['alone_median_s'])} s, with {plan.readers} reading {fmt(c['busy_median_s'])} s")


def capacity_rate(results: dict, plan: Plan) -> float:
    """Requests per second the Poisson run is offered: `load` x what the burst sweep sustained (its best aggregate
    audio seconds per wall second over the mean audio seconds of the Poisson mix)."""
    if plan.rate:
        return plan.rate
    best = max((r["audio_s_per_wall_s"] or 0 for r in results.get("sweep", [])), default=0) or 0.5
    specs = poisson_specs(plan.poisson_requests, 1.0, plan.weights_mix, BENCH_SEED, plan.mode, plan.readout_words)
    mean_audio = statistics.mean(word_count(s.text) * 5 / FRAMES_PER_AUDIO_S for s in specs)
    return max(1e-3, plan.load * best / mean_audio)


async def server_phase(name: str, model: Path, overrides: dict, plan: Plan, scratch: Path, body) -> dict:
    """Starts a server, runs `body(server, results)`, stops it; a failure is recorded, never fatal."""
    results: dict = {"name": name, "overrides": overrides, "sweep": [], "scenarios": [], "texts": []}
    log(f"server {name} ({overrides or 'defaults'}): starting")
    try:
        async with Server(name, model, overrides, scratch, plan.start_timeout) as server:
            results["log"] = str(server.log_path)
            try:
                await body(server, results)
            finally:
                results["alive_at_end"] = server.alive()
        results["peak_rss_mb"] = server.peak_rss_mb
    except Exception as error:  # noqa: BLE001  (a phase that fails leaves its figures out of the report)
        results["error"] = f"{type(error).__name__}: {error}"
        log(f"server {name} failed: {results['error']} (log: {scratch / f'server-{name}.log'})")
    return results


async def run_servers(model: Path, plan: Plan, scratch: Path, client: ClientSettings) -> dict:
    phases = {}

    async def continuous(server, results):
        await sweep(server, plan, plan.rooms, client, results)
        results["rate"] = capacity_rate(results, plan)
        await poisson(server, plan, results["rate"], client, results)
        await contend(server, plan, client, results)

    phases["continuous"] = await server_phase("continuous", model, {}, plan, scratch, continuous)
    rate = phases["continuous"].get("rate") or capacity_rate({}, plan)

    async def static(server, results):
        await sweep(server, plan, plan.static_rooms, client, results)
        await poisson(server, plan, rate, client, results)

    phases["static"] = await server_phase("static", model, {"policy": "static"}, plan, scratch, static)

    async def serial(server, results):
        await sweep(server, plan, plan.serial_rooms, client, results)

    phases["max_batch_1"] = await server_phase("max_batch_1", model, {"max_batch": 1}, plan, scratch, serial)
    return phases


# ---- engine level ---------------------------------------------------------------------------------------------------

def stage_timings(model, runner, batch: int, context: int, steps: int) -> dict:
    """Medians over `steps` real engine steps (EngineCore.step) of `batch` decoding requests: talker alone (a runner
    step that re-runs each request's last row and emits nothing), the runner's whole frame, and the host's part of a
    step: its wall time minus the runner's (messages, schedule(), update(), the stats snapshot)."""
    from bench_engine import start_batch

    from service.engine.scheduler import ScheduledEntry

    core, seqs = start_batch(model, runner, batch, context, frame_cap=2 * steps + 8)

    def talker_only() -> float:
        # A random model may say eos now and then: a finished request holds no blocks, so it is left out.
        started = time.perf_counter()
        runner.step([ScheduledEntry(s, s.num_computed - 1, 1, False) for s in seqs if not s.is_finished])
        return time.perf_counter() - started

    def frame() -> dict:
        started = time.perf_counter()
        report = core.step()
        wall = time.perf_counter() - started
        return {"wall": wall, "runner": report.runner_seconds, "update": report.seconds - report.runner_seconds,
                "batch": report.batch}

    talker_only()  # warm-up of this batch shape
    talker = statistics.median(talker_only() for _ in range(steps))
    frame()
    frames = [frame() for _ in range(steps)]
    ran = statistics.median(f["batch"] for f in frames)

    def med(key: str) -> float:
        return statistics.median(f[key] for f in frames) * 1000

    host = statistics.median((f["wall"] - f["runner"]) for f in frames) * 1000
    return {"batch": batch, "batch_ran": ran, "talker_ms": talker * 1000, "runner_frame_ms": med("runner"),
            "code_predictor_sampling_ms": med("runner") - talker * 1000, "step_ms": med("wall"), "host_ms": host,
            "update_ms": med("update"), "schedule_ms": host - med("update"),
            "host_share": host / med("wall"), "frames_per_s": ran * 1000 / med("wall")}


def kv_tokens(directory: Path, texts: list[tuple[str, str]]) -> list[dict]:
    """The KV rows each reply's sentences need at their last frame (prompt rows + frames - 1), built by the server's own
    sentence splitter and RequestBuilder with the benchmark's settings."""
    from service.config import EngineSettings
    from service.frontend.requests import RequestBuilder
    from service.modeldir.manifest import ModelDir
    from service.wyoming.sentences import StreamingSentences

    builder = RequestBuilder(ModelDir(directory), EngineSettings(benchmark_frames_per_word=5, seed=BENCH_SEED))
    replies, seen = [], set()
    for kind, text in texts:
        if text in seen:
            continue
        seen.add(text)
        splitter = StreamingSentences()
        sentences = splitter.add(text)
        if (rest := splitter.finish()) is not None:
            sentences.append(rest)
        seqs = [builder.build(s) for s in sentences]
        replies.append({"kind": kind, "sentences": [{"prompt_rows": q.num_prompt_rows, "frames": q.frame_cap,
                                                     "tokens": q.max_rows} for q in seqs]})
    return replies


def engine_phase(directory: Path, plan: Plan, texts: list[tuple[str, str]], isa_flags: set[str]) -> dict:
    from bench_engine import bench_codec, kv_bytes_per_token

    from service.engine.runner import PagedRunner, RunnerOptions
    from service.errors import SetupError
    from service.modeldir.manifest import ModelDir

    out: dict = {"skipped": {}}
    log("engine level: token counts of every reply in the run")
    out["replies"] = kv_tokens(directory, texts)
    gc.collect()
    model = ModelDir(directory)
    runner = PagedRunner(model, RunnerOptions(device="CPU", kv_precision="u8", kv_cache_bytes=512 << 20))
    out["block_size"] = runner.block_size
    out["kv_bytes_per_token"] = {"u8": runner.bytes_per_block / runner.block_size}
    out["stages"] = []
    for batch in plan.engine_batches:
        log(f"engine level: stage timings at batch {batch} (u8 KV)")
        try:
            out["stages"].append(stage_timings(model, runner, batch, plan.context, plan.engine_steps))
        except Exception as error:  # noqa: BLE001  (one batch size that fails leaves the others)
            out["skipped"][f"stages at batch {batch}"] = f"{type(error).__name__}: {error}"
            log(f"  failed: {out['skipped'][f'stages at batch {batch}']}")
    del runner
    gc.collect()
    log("engine level: batch 8 with f16 KV")
    try:
        runner = PagedRunner(model, RunnerOptions(device="CPU", kv_precision="f16", kv_cache_bytes=512 << 20))
        out["kv_bytes_per_token"]["f16"] = runner.bytes_per_block / runner.block_size
        out["f16_batch8"] = stage_timings(model, runner, 8, plan.context, plan.engine_steps)
        del runner
    except Exception as error:  # noqa: BLE001  (SetupError: a CPU without f16 KV; anything else: noted, not fatal)
        out["skipped"]["f16"] = f"{type(error).__name__}: {error}"
    gc.collect()
    if "avx512_bf16" in isa_flags or "amx_bf16" in isa_flags:
        try:
            out["kv_bytes_per_token"]["bf16"] = kv_bytes_per_token(directory, "bf16")
        except SetupError as error:
            out["skipped"]["bf16"] = str(error)
    else:
        out["skipped"]["bf16"] = "no bf16 on this CPU"
    log("engine level: codec decoder")
    out["codec_ms_per_audio_s"] = bench_codec(directory, 28 if plan.engine_steps <= 4 else 52, "")
    return out


# ---- KV capacity -----------------------------------------------------------------------------------------------------

def reply_demand(reply: dict, block: int) -> tuple[int, list[int]]:
    """(paged tokens a reply holds at its peak, its sentences' tokens). A reply has up to LOOKAHEAD sentences
    generating at once: its peak is the largest sum of LOOKAHEAD consecutive sentences, each in whole blocks."""
    tokens = [s["tokens"] for s in reply["sentences"]]
    padded = [math.ceil(t / block) * block for t in tokens]
    window = min(LOOKAHEAD, len(padded))
    return max(sum(padded[i:i + window]) for i in range(len(padded) - window + 1)), tokens


def rooms_held(replies: list[dict], block: int, budget_tokens: int) -> dict:
    """Rooms (replies at once, each at its peak) a pool of `budget_tokens` holds on average over this run's replies:
    paged (whole blocks as needed) vs each bucket size S (every in-flight sentence reserves S tokens up front; a
    sentence longer than S cannot run, so those replies are left out and counted as not fitting)."""
    demands = [reply_demand(r, block) for r in replies]
    held = {"paged": math.floor(budget_tokens / statistics.mean(d for d, _ in demands))}
    fits = {}
    for size in BUCKETS:
        ok = [min(LOOKAHEAD, len(t)) * size for _, t in demands if max(t) <= size]
        fits[size] = len(ok) / len(demands)
        held[f"bucket {size}"] = math.floor(budget_tokens / statistics.mean(ok)) if ok else 0
    return {"held": held, "fits": fits}


def kv_analysis(engine: dict, pool_blocks: float | None) -> dict:
    replies = [r for r in engine.get("replies", []) if r["sentences"]]
    if not replies or "block_size" not in engine:
        return {}
    block = engine["block_size"]
    pool_tokens = int((pool_blocks or 126) * block)
    demands = [reply_demand(r, block)[0] for r in replies]
    sentences = [s for r in replies for s in r["sentences"]]
    budgets = [2 ** k for k in range(9, 16)]
    curves: dict[str, list[float]] = {}
    for budget in budgets:
        for scheme, rooms in rooms_held(replies, block, budget)["held"].items():
            curves.setdefault(f"paged ({block}-token blocks)" if scheme == "paged" else scheme, []).append(rooms)
    at_pool = rooms_held(replies, block, pool_tokens)
    bpt = engine["kv_bytes_per_token"]
    pool_bytes = pool_tokens * bpt["u8"]
    by_precision = {p: math.floor(pool_bytes / b / statistics.mean(demands)) for p, b in bpt.items()}
    return {"block_size": block, "pool_tokens": pool_tokens, "pool_bytes": pool_bytes, "replies": len(replies),
            "sentences": len(sentences),
            "tokens_per_sentence_mean": statistics.mean(s["tokens"] for s in sentences),
            "tokens_per_sentence_max": max(s["tokens"] for s in sentences),
            "prompt_rows_mean": statistics.mean(s["prompt_rows"] for s in sentences),
            "paged_tokens_per_reply_mean": statistics.mean(demands),
            "at_pool": at_pool, "budgets": budgets, "curves": curves,
            "rooms_by_kv_precision_same_bytes": by_precision}


# ---- the report ------------------------------------------------------------------------------------------------------

def fmt(value, digits: int = 2, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def machine(directory: Path, kv: str) -> dict:
    import openvino

    from service.engine.device import cpu_facts
    from service.modeldir.manifest import ModelDir

    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags_line = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    name = re.search(r"^model name\s*:\s*(.*)$", text, re.MULTILINE)
    manifest = ModelDir(directory).manifest
    try:
        inference = cpu_facts().inference_precision("")
    except Exception:  # noqa: BLE001  (a header detail, not a reason to fail)
        inference = "device default"
    return {
        "isa": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8") if f in flags],
        "isa_flags": sorted(flags & {"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}),
        "cpu": name.group(1).strip() if name else "unknown", "cores": os.cpu_count(),
        "model": f"{manifest.name} ({manifest.model_type})", "model_dir": str(directory),
        "random_weights": manifest.random_weights, "weights": manifest.weights, "kv_precision": kv,
        "inference_precision": inference, "openvino": openvino.get_version(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    }


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def targets(phases: dict, engine: dict, kv: dict) -> list[dict]:
    cont, stat = phases.get("continuous", {}), phases.get("static", {})
    sweep = {r["rooms"]: r for r in cont.get("sweep", [])}
    c = cont.get("contention", {})
    pool = kv.get("at_pool", {}).get("held", {})
    bpt = engine.get("kv_bytes_per_token", {})
    at16 = next((s for s in engine.get("stages", []) if s["batch"] == 16), None)
    rows = [
        ("p95 time to first audio, continuous vs static (mixed, Poisson arrivals)",
         ratio(cont.get("poisson", {}).get("ttfa_p95_s"), stat.get("poisson", {}).get("ttfa_p95_s")), "<=", 0.5, "x"),
        ("p95 time to first audio, 8 rooms vs 1 room (mixed burst, continuous)",
         ratio(sweep.get(8, {}).get("ttfa_p95_s"), sweep.get(1, {}).get("ttfa_p95_s")), "<=", 2.0, "x"),
        (f"announcement's time to first audio while {c.get('readers', 7)} rooms read long texts vs alone (medians)",
         ratio(c.get("busy_median_s"), c.get("alone_median_s")), "<=", 1.5, "x"),
        ("rooms held at the server's KV pool, paged vs 1024-token buckets",
         ratio(pool.get("paged"), pool.get("bucket 1024")), ">=", 2.5, "x"),
        ("KV bytes per token, u8 vs f16", ratio(bpt.get("u8"), bpt.get("f16")), "<=", 0.6, "x"),
        ("scheduler host overhead per step at batch 16 (host ms / step ms)",
         at16["host_share"] if at16 else None, "<=", 0.05, "%"),
    ]
    out = []
    for name, value, op, goal, unit in rows:
        met = None if value is None else (value <= goal if op == "<=" else value >= goal)
        out.append({"measure": name, "value": value, "target": f"{op} {goal:.0%}" if unit == "%" else f"{op} {goal:g}x",
                    "unit": unit, "met": met})
    return out


def realtime_rooms(sweep: list[dict], scenarios: list[Scenario]) -> int:
    """The largest N of the mixed burst at which every request's RTF was below 1 (cut read-outs: over the part they
    ran) with no error: every room heard its reply at least as fast as it plays."""
    best = 0
    by_name = {s.name: s for s in scenarios}
    for r in sweep:
        scenario = by_name.get(f"continuous burst {r['rooms']}")
        if scenario is None or r["errors"]:
            continue
        rtfs = [o.rtf for o in scenario.outcomes if o.rtf is not None]
        if rtfs and len(rtfs) == len(scenario.outcomes) and max(rtfs) < 1:
            best = max(best, r["rooms"])
    return best


def load_peers(path: str | None) -> list[dict]:
    if not path:
        return []
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(raw, dict) and isinstance(raw.get("peers"), list):  # scripts/bench_peers.py --json
        raw = raw["peers"]
    elif isinstance(raw, dict):
        raw = [raw] if "name" in raw else [{"name": k, **v} for k, v in raw.items() if isinstance(v, dict)]
    return [p for p in raw if isinstance(p, dict)]


def peers_table(peers: list[dict], sweep: list[dict]) -> list[str]:
    by_rooms = {r["rooms"]: r for r in sweep}

    def ours(rooms: int):
        r = by_rooms.get(rooms, {})
        return r["audio_s_per_wall_s"] * FRAMES_PER_AUDIO_S if r.get("audio_s_per_wall_s") else None

    one = ours(1)
    lines = ["| system | one stream frames/s | one stream RTF | 4 rooms aggregate frames/s | "
             "8 rooms aggregate frames/s |",
             "|---|---:|---:|---:|---:|",
             f"| **wyoming-chorus (this run)** | {fmt(one, 1)} | {fmt(FRAMES_PER_AUDIO_S / one if one else None)} | "
             f"{fmt(ours(4), 1)} | {fmt(ours(8), 1)} |"]
    for p in peers:
        o, c = p.get("one_stream", {}) or {}, p.get("concurrent", {}) or {}

        def agg(n: str, c=c):
            return (c.get(n) or {}).get("aggregate_frames_per_s")

        rel = [fmt(ratio(mine, theirs), unit="x") for mine, theirs in
               ((one, o.get("frames_per_s")), (ours(4), agg("4")), (ours(8), agg("8")))]
        lines.append(f"| {p.get('name', '?')} | {fmt(o.get('frames_per_s'), 1)} (ours {rel[0]}) | "
                     f"{fmt(o.get('rtf'))} | "
                     f"{fmt(agg('4'), 1)} (ours {rel[1]}) | {fmt(agg('8'), 1)} (ours {rel[2]}) |")
    return lines


def sweep_table(label: str, rows: list[dict], first: str = "rooms") -> list[str]:
    lines = [f"**{label}**", "",
             f"| {first} | requests | errors | TTFA p50 / p95 / p99 (s) | RTF p50 / max | audio s per wall s | "
             "mean batch | mean step (ms) | peak KV blocks | preemptions |",
             "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r.get('rooms', r.get('label', ''))} | {r['requests']} | {r['errors']} | {fmt(r['ttfa_p50_s'])} / "
            f"{fmt(r['ttfa_p95_s'])} / {fmt(r['ttfa_p99_s'])} | {fmt(r['rtf_p50'])} / {fmt(r['rtf_max'])} | "
            f"{fmt(r['audio_s_per_wall_s'])} | {fmt(r.get('server_batch_mean'), 1)} | "
            f"{fmt(r.get('server_step_ms_mean'), 0)} | {fmt(r.get('server_kv_blocks_peak'), 0)} | "
            f"{fmt(r.get('server_preemptions'), 0)} |")
    return lines + [""]


def by_kind(phases: dict) -> tuple[list[str], dict[str, list[float]]]:
    """TTFA and RTF by kind and mode over every scenario of each server (the RTF groups feed the plot)."""
    lines = ["| server | kind | mode | requests | TTFA p50 / p95 (s) | RTF p50 (complete) | RTF p50 (cut) |",
             "|---|---|---|---:|---|---|---|"]
    groups: dict[str, list[float]] = {}
    for name, phase in phases.items():
        outcomes = [o for s in phase.get("scenarios", []) for o in s.outcomes]
        for key in sorted({(o.kind, o.mode) for o in outcomes}):
            summary = summarise(Scenario("", [o for o in outcomes if (o.kind, o.mode) == key]))
            probe = key[0].startswith("announce (")  # hung up at its first audio: no RTF
            lines.append(f"| {name} | {key[0]} | {key[1]} | {summary['requests']} | {fmt(summary['ttfa_p50_s'])} / "
                         f"{fmt(summary['ttfa_p95_s'])} | {'-' if probe else fmt(summary['rtf_p50'])} | "
                         f"{'-' if probe else fmt(summary['rtf_partial_p50'])} |")
        for s in phase.get("scenarios", []):
            workload = s.name.split(" ", 1)[1] if " " in s.name else s.name
            if workload.startswith("burst"):
                workload = "burst"
            if workload == "contention":  # probes hang up at once, readers are cut seconds in: no RTF worth a box
                continue
            for o in s.outcomes:
                if o.rtf is not None:
                    groups.setdefault(f"{name} {workload} {o.kind}{' (cut)' if o.cut else ''}", []).append(o.rtf)
    return lines, groups


def write_report(out: Path, header: dict, plan: Plan, phases: dict, engine: dict, kv: dict, peers: list[dict],
                 elapsed: float, args) -> Path:
    cont = phases.get("continuous", {})
    lines = ["# wyoming-chorus benchmark", "",
             f"- **Machine**: {header['cpu']}, {header['cores']} cores, ISA {' '.join(header['isa']) or 'unknown'}",
             f"- **Model**: {header['model']}{' (RANDOM weights)' if header['random_weights'] else ''}, "
             f"{header['weights']} weights, inference {header['inference_precision']}, KV {header['kv_precision']}",
             f"- **OpenVINO** {header['openvino']}; **date** {header['date']}; run took {elapsed / 60:.1f} min "
             f"(`{' '.join(sys.argv)}`)",
             "- Server: `wyoming-chorus` subprocess, engine.benchmark_frames_per_word 5 (12.5 frames/s at 2.5 "
             "words/s), "
             f"engine.seed {BENCH_SEED}, other settings the embedded config.yaml's (KV pool "
             f"{fmt(kv.get('pool_tokens'))} tokens). One run on a shared machine: compare ratios, not absolutes.", ""]
    lines += ["## Targets", "", "| measure | value | target | met |", "|---|---:|---|---|"]
    for t in targets(phases, engine, kv):
        value = "n/a" if t["value"] is None else (f"{t['value']:.1%}" if t["unit"] == "%" else f"{t['value']:.2f}x")
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['measure']} | {value} | {t['target']} | {met} |")
    rt = realtime_rooms(cont.get("sweep", []), cont.get("scenarios", []))
    best = max((r["audio_s_per_wall_s"] or 0 for r in cont.get("sweep", [])), default=0)
    lines += ["", f"**Rooms held in real time: {rt}** (the largest N of the mixed burst at which every request, cut "
              f"read-outs over the part they ran, had RTF < 1 and none failed). Throughput bound: the best aggregate "
              f"was "
              f"{best:.2f} audio s per wall s, i.e. at most {math.floor(best)} rooms speaking continuously.", ""]

    lines += ["## Rooms at once (mixed burst)", "",
              "Room i speaks kind i of the cycle assistant, announce, announce, assistant, announce, assistant, "
              "announce, read-out (so read-outs appear from 8 rooms on); assistant replies are streamed "
              f"(`--mode {plan.mode}`), the rest one-shot. "
              + ("Read-outs are cut once the other rooms are done. " if not plan.full_readouts else ""), ""]
    labels = {"continuous": "continuous batching (the server's default)", "static": "static batching (baseline)",
              "max_batch_1": "one request at a time, engine.max_batch 1 (baseline)"}
    for name, phase in phases.items():
        if phase.get("error"):
            lines += [f"**{labels[name]}**: failed: {phase['error']}", ""]
        elif phase.get("sweep"):
            lines += sweep_table(labels[name], phase["sweep"])
    lines += ["## Poisson arrivals (mixed)", ""]
    prows = [{**phases[n]["poisson"], "label": n} for n in ("continuous", "static") if phases.get(n, {}).get("poisson")]
    if prows:
        how = "--rate" if plan.rate else f"{plan.load:.0%} of the capacity the continuous burst sweep measured"
        lines += [f"{plan.poisson_requests} requests (announcements : assistant replies : read-outs drawn 5 : 4 : 1, "
                  "at "
                  f"least one each) at a mean {prows[0]['rate_per_s']:.3f} requests/s "
                  f"({how}"
                  "); the same arrivals for both servers.", ""]
        lines += sweep_table("continuous vs static", prows, "server")[2:]
    c = cont.get("contention")
    if c:
        lines += ["## A short announcement while rooms read long texts", "",
                  f"{plan.probes} announcements one after another, alone, then again once all {c['readers']} read-outs "
                  f"({plan.readout_words}+ words, one-shot) were speaking ({c['readers_heard']} had first audio); "
                  "each probe hangs up at its first audio chunk.", "",
                  "| | times to first audio (s) | median (s) |", "|---|---|---:|",
                  f"| alone | {', '.join(f'{x:.2f}' for x in c['alone_ttfa_s'])} | {fmt(c['alone_median_s'])} |",
                  f"| {c['readers']} rooms reading | {', '.join(f'{x:.2f}' for x in c['busy_ttfa_s'])} | "
                  f"{fmt(c['busy_median_s'])} |", ""]
    kind_lines, rtf_groups = by_kind(phases)
    lines += ["## By kind and mode (all scenarios of each server)", "", *kind_lines, ""]

    lines += ["## Step time by stage (engine level)", "",
              "Not all stages are on /metrics (it has whole-step seconds and batch sizes only), so they are measured "
              "in "
              "this process on real runner steps with u8 KV, "
              f"{plan.context} prompt rows per request, medians of {plan.engine_steps} steps. Talker: a step that "
              "re-runs each request's last row and emits nothing; code predictor + sampling: the runner's frame minus "
              "that (the runner does not time them apart); host: the engine step's wall time minus the runner's "
              "(EngineCore.step: messages + schedule() + the stats snapshot / update()). The codec decoder runs on "
              "its own thread beside the steps.", "",
              "| batch | step (ms) | talker | code predictor + sampling | host (schedule / update) | "
              "host share | frames/s |", "|---:|---:|---:|---:|---|---:|---:|"]
    for s in engine.get("stages", []):
        ran = "" if s["batch_ran"] == s["batch"] else f" (ran {s['batch_ran']:g}: eos)"
        lines.append(f"| {s['batch']}{ran} | {s['step_ms']:.1f} | {s['talker_ms']:.1f} | "
                     f"{s['code_predictor_sampling_ms']:.1f}"
                     f" | {s['host_ms']:.2f} ({s['schedule_ms']:.2f} / {s['update_ms']:.2f}) | "
                     f"{s['host_share']:.1%} | {s['frames_per_s']:.1f} |")
    for what, why in engine.get("skipped", {}).items():
        if what.startswith("stages"):
            lines.append(f"| {what.split()[-1]} | failed: {why} | | | | | |")
    if engine.get("codec_ms_per_audio_s") is not None:
        codec = engine["codec_ms_per_audio_s"]
        lines += ["", f"Codec decoder: {codec:.0f} ms of compute per second of audio (streamed as the engine streams "
                  f"it), i.e. {codec * 0.08:.1f} ms per frame; a step of batch B hands it B frames.", ""]
    served = [(n, r) for n, p in phases.items() for r in p.get("sweep", [])]
    if served:
        lines += ["Server side (/metrics: chorus_step_seconds, chorus_batch_size) is in the sweep tables above.", ""]
    if engine.get("error"):
        lines += [f"Engine-level measurements failed: {engine['error']}", ""]

    if kv:
        held, fits = kv["at_pool"]["held"], kv["at_pool"]["fits"]
        lines += ["## KV cache: paged blocks vs fixed buckets", "",
                  f"From the tokens each reply of the run needs ({kv['replies']} replies, {kv['sentences']} sentences: "
                  f"mean {kv['tokens_per_sentence_mean']:.0f} tokens per sentence, "
                  f"max {kv['tokens_per_sentence_max']}, "
                  f"of which {kv['prompt_rows_mean']:.0f} prompt rows on average; tokens = prompt rows + frames - 1, "
                  "built by the server's own sentence splitter and RequestBuilder). A reply holds up to "
                  f"{LOOKAHEAD} sentences at once (the server's lookahead), each at its peak. Paged: whole "
                  f"{kv['block_size']}-token blocks as needed (mean {kv['paged_tokens_per_reply_mean']:.0f} tokens per "
                  "reply). Bucket S: every sentence reserves S tokens up front; a sentence longer than S cannot run "
                  "(its reply is left out). Rooms held = pool / mean demand per room.", "",
                  f"| scheme | rooms held in the server's pool ({kv['pool_tokens']} tokens) | replies that fit |",
                  "|---|---:|---:|", f"| paged | {held['paged']} | 100% |"]
        lines += [f"| bucket {s} | {held[f'bucket {s}']}{'' if fits[s] == 1 else ' (of the replies that fit)'} | "
                  f"{fits[s]:.0%} |" for s in BUCKETS]
        bpt = engine.get("kv_bytes_per_token", {})
        f16 = engine.get("f16_batch8")
        u8_8 = next((s for s in engine.get("stages", []) if s["batch"] == 8), None)
        lines += ["", "| KV precision | bytes per token | rooms held at the same bytes "
                  f"({kv['pool_bytes'] / 2**20:.0f} MiB) | step at batch 8 (ms) |", "|---|---:|---:|---:|"]
        for p, b in bpt.items():
            step = (u8_8 if p == "u8" else f16 if p == "f16" else None)
            lines.append(f"| {p} | {b:,.0f} | {kv['rooms_by_kv_precision_same_bytes'][p]} | "
                         f"{fmt(step['step_ms'] if step else None, 1)} |")
        for p, why in engine.get("skipped", {}).items():
            if p in ("f16", "bf16"):
                lines.append(f"| {p} | skipped: {why} | | |")
        lines.append("")

    mem = [(n, p.get("peak_rss_mb")) for n, p in phases.items() if p.get("peak_rss_mb")]
    if mem:
        lines += ["## Memory", "", "| server | peak RSS (VmHWM, MB) | peak KV blocks used (of total) |",
                  "|---|---:|---:|"]
        for n, rss in mem:
            blocks = [s.extra.get("server", {}) for s in phases[n].get("scenarios", [])]
            peak = max((b.get("kv_blocks_peak") or 0 for b in blocks), default=0)
            total = next((b.get("kv_blocks_total") for b in blocks if b.get("kv_blocks_total")), None)
            lines.append(f"| {n} | {rss:.0f} | {peak:.0f} of {fmt(total, 0)} |")
        lines.append("")

    if peers:
        lines += ["## Peers", "", "Frames/s: 12.5 frames per audio second. Ours: the continuous mixed burst at 1, 4 "
                  "and "
                  "8 rooms (one stream = 1 room).", "", *peers_table(peers, cont.get("sweep", [])), ""]

    errors = {n: sum(r["errors"] for r in p.get("sweep", [])) + (p.get("poisson", {}) or {}).get("errors", 0)
              for n, p in phases.items()}
    lines += ["## Notes", "",
              f"- Client-side errors by server: {', '.join(f'{n} {e}' for n, e in errors.items())}. Server logs: "
              + ", ".join(f"`{p.get('log')}`" for p in phases.values() if p.get("log")) + ".",
              "- The model has random weights: its audio is noise and the reply length comes from "
              "engine.benchmark_frames_per_word, so these figures are the server's and the engine's speed at the "
              "model's dimensions, not speech quality.",
              "- Time to first audio is measured by the client from its first text event (a stream's "
              "synthesize-chunk) to the first audio-chunk; a streamed reply's first sentence waits for its end to "
              "arrive in the deltas (plus the splitter's 0.2 s grace when the text pauses).", ""]

    plots = {}
    sweeps = {labels[n].split(",")[0].split(" (")[0]: p.get("sweep", []) for n, p in phases.items() if p.get("sweep")}
    try:
        import bench_plots  # matplotlib: a benchmark dependency only

        plots["ttfa"] = bench_plots.ttfa_vs_rooms(sweeps, out / "ttfa_vs_rooms.png")
        plots["throughput"] = bench_plots.throughput_vs_rooms(sweeps, out / "throughput_vs_rooms.png")
        plots["rtf"] = bench_plots.rtf_distribution(rtf_groups, out / "rtf_by_workload.png")
        if kv:
            plots["kv"] = bench_plots.kv_rooms(kv["budgets"], kv["curves"], out / "kv_rooms_vs_budget.png",
                                               kv["pool_tokens"])
    except Exception as error:  # noqa: BLE001  (a plot that fails must not lose the report)
        lines += [f"- Plotting failed: {type(error).__name__}: {error}", ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{k}]({p.name})" for k, p in plots.items()] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def to_json(phases: dict) -> dict:
    return {n: {k: ([s.to_json() for s in v] if k == "scenarios" else v) for k, v in p.items() if k != "texts"}
            for n, p in phases.items()}


# ---- main ------------------------------------------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="builtin:tiny, a couple of rooms, seconds (CI)")
    p.add_argument("--model", help="an existing model directory (overrides --preset)")
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
    p.add_argument("--rate", type=float, help="Poisson mean arrivals per second (default: --load x measured capacity)")
    p.add_argument("--load", type=float, default=0.7, help="Poisson load as a fraction of the measured capacity")
    p.add_argument("--readers", type=int, help="rooms reading long texts against the announcement (default 7)")
    p.add_argument("--probes", type=int, help="announcements alone and under contention (default 3)")
    p.add_argument("--readout-words", type=int, default=200, help="least words of a read-out")
    p.add_argument("--mode", default="ha", choices=["ha", "stream", "oneshot"],
                   help="ha: assistant replies streamed, the rest one-shot (as Home Assistant sends them)")
    p.add_argument("--full-readouts", action="store_true", help="run read-outs to their end instead of cutting them")
    p.add_argument("--engine-batches", help="batch sizes of the engine-level stage timings (default 1,8,16)")
    p.add_argument("--engine-steps", type=int, help="steps per engine-level measurement (default 8; quick 4)")
    p.add_argument("--context", type=int, help="prompt rows per request at engine level (default 128; quick 32)")
    p.add_argument("--timeout", type=float, help="seconds per request before it counts as failed")
    p.add_argument("--start-timeout", type=float, help="seconds for a server to load and compile")
    p.add_argument("--skip-engine", action="store_true", help="leave out the engine-level measurements")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    plan = make_plan(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    peers = load_peers(args.peers)  # read first: a bad file must not cost a whole run
    directory = model_dir(args)
    header = machine(directory, "u8")
    log(f"model {directory} ({header['weights']} weights), {header['cpu']}, ISA {' '.join(header['isa'])}")
    client = ClientSettings(timeout=plan.timeout, cut_readouts=not plan.full_readouts)
    scratch = Path(tempfile.mkdtemp(prefix="chorus-bench-"))
    phases = asyncio.run(run_servers(directory, plan, scratch, client))
    engine: dict = {}
    if not args.skip_engine:
        texts = [t for n in ("continuous", "static") for t in phases.get(n, {}).get("texts", [])]
        if not texts:  # no server ran: the workloads the run would have sent
            texts = [(s.kind, s.text) for n in plan.rooms for s in burst_specs(n, BENCH_SEED, plan.mode,
                                                                              plan.readout_words)]
        try:
            engine = engine_phase(directory, plan, texts, set(header["isa_flags"]))
        except Exception as error:  # noqa: BLE001  (the server figures are still worth a report)
            engine = {"error": f"{type(error).__name__}: {error}"}
            log(f"engine level failed: {engine['error']}")
    pool = next((s.extra["server"].get("kv_blocks_total") for p in phases.values() for s in p.get("scenarios", [])
                 if s.extra.get("server", {}).get("kv_blocks_total")), None)
    kv = kv_analysis(engine, pool) if engine and not engine.get("error") else {}
    elapsed = time.monotonic() - started
    report = write_report(out, header, plan, phases, engine, kv, peers, elapsed, args)
    (out / "report.json").write_text(json.dumps({
        "header": header, "plan": plan.__dict__, "phases": to_json(phases), "engine": engine, "kv": kv,
        "targets": targets(phases, engine, kv), "peers": peers, "elapsed_s": elapsed}, indent=1, default=str))
    log(f"wrote {report} (+ report.json, plots) in {elapsed:.0f} s")
    failed = [n for n, p in phases.items() if p.get("error")] + (["engine"] if engine.get("error") else [])
    if failed:
        log(f"phases that failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
