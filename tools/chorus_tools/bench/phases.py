"""tools/bench.py against real servers: each phase starts `wyoming-chorus` in a child process (the embedded
config.yaml with the benchmark's engine settings), runs its scenarios with /metrics read before and after and its
gauges sampled meanwhile, and stops it; a phase that fails is recorded, never fatal."""
from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

from chorus_tools.bench.figures import fmt
from chorus_tools.bench.plan import BENCH_SEED, FRAMES_PER_AUDIO_S, Plan, log
from chorus_tools.bench.summary import summarise
from chorus_tools.bench.workloads import (
    ClientSettings,
    Scenario,
    burst_specs,
    poisson_specs,
    run_specs,
    sample_metrics,
    word_count,
)
from chorus_tools.probes import peak_rss_mb, scrape
from chorus_tools.servers import ServerProcess


def bench_server(name: str, model: Path, overrides: dict, scratch: Path, start_timeout: float,
                 inference_precision: str = "") -> ServerProcess:
    """`overrides`: {section: {key: value}}. engine.benchmark_frames_per_word 5: a random model's reply ends after 5
    frames per word; a fixed seed."""
    engine = {"model": str(model), "benchmark_frames_per_word": 5, "seed": BENCH_SEED, **overrides.get("engine", {})}
    if inference_precision:
        engine.setdefault("inference_precision", inference_precision)
    return ServerProcess(scratch / f"server-{name}.log", overrides={**overrides, "engine": engine},
                         start_timeout=start_timeout)


async def settle(server: ServerProcess, timeout: float = 60.0) -> None:
    """Until every block is free and nothing runs or waits (cut requests are aborted at the next step)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        values = await scrape(server.metrics_port)
        if not (values.get("chorus_kv_blocks_used") or values.get("chorus_requests_running")
                or values.get("chorus_requests_waiting")):
            return
        await asyncio.sleep(0.3)


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


async def measured(server: ServerProcess, run) -> Scenario:
    """Runs the scenario coroutine `run` with /metrics read before and after and its gauges sampled meanwhile."""
    await settle(server)
    before = await scrape(server.metrics_port)
    peaks: dict = {}
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_metrics(lambda: scrape(server.metrics_port), 0.5, peaks, stop))
    try:
        scenario = await run
    finally:
        stop.set()
        await sampler
    await settle(server)
    scenario.extra["server"] = server_delta(before, await scrape(server.metrics_port), peaks)
    return scenario


def row(scenario: Scenario, **extra) -> dict:
    summary = summarise(scenario)
    summary.pop("rtfs")
    return {**extra, **summary, **{f"server_{k}": v for k, v in scenario.extra.get("server", {}).items()}}


async def sweep(server: ServerProcess, plan: Plan, rooms: list[int], client: ClientSettings, results: dict) -> None:
    for n in rooms:
        specs = burst_specs(n, BENCH_SEED, plan.mode, plan.readout_words)
        results["texts"] += [(s.kind, s.text) for s in specs]
        scenario = await measured(server, run_specs(f"{results['name']} burst {n}", server.port, specs, client))
        results["scenarios"].append(scenario)
        results["sweep"].append(row(scenario, rooms=n))
        r = results["sweep"][-1]
        log(f"  {results['name']} burst {n:>2} rooms: ttfa p50 {fmt(r['ttfa_p50_s'])} p95 {fmt(r['ttfa_p95_s'])} s, "
            f"audio/s {fmt(r['audio_s_per_wall_s'])}, errors {r['errors']}, wall {scenario.wall_s:.0f} s")


async def poisson(server: ServerProcess, plan: Plan, rate: float, client: ClientSettings, results: dict) -> None:
    if not plan.poisson_requests:  # --poisson-requests 0: left out
        return
    specs = poisson_specs(plan.poisson_requests, rate, plan.weights_mix, BENCH_SEED, plan.mode, plan.readout_words)
    results["texts"] += [(s.kind, s.text) for s in specs]
    scenario = await measured(server, run_specs(f"{results['name']} poisson", server.port, specs, client))
    scenario.extra["rate_per_s"] = rate
    results["scenarios"].append(scenario)
    results["poisson"] = row(scenario, rate_per_s=rate)
    r = results["poisson"]
    log(f"  {results['name']} poisson ({plan.poisson_requests} requests at {rate:.3f}/s): ttfa p95 "
        f"{fmt(r['ttfa_p95_s'])} s, errors {r['errors']}, wall {scenario.wall_s:.0f} s")


def contention_figures(scenario: Scenario, plan: Plan) -> dict:
    """The announcement-under-readers scenario's figures (its rounds pooled): first audio alone, under readers just
    started, under readers playing; each probe's underrun seconds and whether it was heard with no gap."""
    announcements = [o for o in scenario.outcomes if o.kind.startswith("announce (")]
    probes = {"alone": [o for o in announcements if o.kind == "announce (alone)"],
              "busy": [o for o in announcements if o.kind.endswith(" reading)")],
              "playing": [o for o in announcements if o.kind.endswith(" playing)")]}
    readers = [o for o in scenario.outcomes if o.kind == "readout"]
    c = {
        "readers": plan.readers, "readers_heard": scenario.extra.get("readers_heard"),
        "readers_playing": scenario.extra.get("readers_playing"),
        "reader_errors": sum(o.error is not None for o in readers),
        "server": scenario.extra.get("server"),
    }
    for label, outcomes in probes.items():
        first = [o.ttfa_s for o in outcomes if o.ttfa_s is not None]
        c[f"{label}_ttfa_s"] = first
        c[f"{label}_median_s"] = statistics.median(first) if first else None
        c[f"{label}_underrun_s"] = [o.underrun_s for o in outcomes if o.error is None and o.audio_s > 0]
        c[f"{label}_held"] = sum(o.gap_free for o in outcomes)
    log(f"  announcement alone: first audio {fmt(c['alone_median_s'])} s; with {plan.readers} reading: "
        f"{fmt(c['busy_median_s'])} s, underrun s {fmt(sum(c['busy_underrun_s']))}; with {plan.readers} playing: "
        f"{fmt(c['playing_median_s'])} s, underrun s {fmt(sum(c['playing_underrun_s']))}")
    return c


def capacity_rate(results: dict, plan: Plan) -> float:
    """Requests per second the Poisson run is offered: `load` x what the burst sweep sustained (its best aggregate
    audio seconds per wall second over the mean audio seconds of the Poisson mix)."""
    if plan.rate:
        return plan.rate
    if not plan.poisson_requests:
        return 0.0  # no Poisson run to offer it to
    best = max((r["audio_s_per_wall_s"] or 0 for r in results.get("sweep", [])), default=0) or 0.5
    specs = poisson_specs(plan.poisson_requests, 1.0, plan.weights_mix, BENCH_SEED, plan.mode, plan.readout_words)
    mean_audio = statistics.mean(word_count(s.text) * 5 / FRAMES_PER_AUDIO_S for s in specs)
    return max(1e-3, plan.load * best / mean_audio)


async def server_phase(name: str, model: Path, overrides: dict, plan: Plan, scratch: Path, body) -> dict:
    """Starts a server, runs `body(server, results)`, stops it; a failure is recorded, never fatal."""
    results: dict = {"name": name, "overrides": overrides, "sweep": [], "scenarios": [], "texts": []}
    log(f"server {name} ({overrides or 'defaults'}): starting")
    try:
        async with bench_server(name, model, overrides, scratch, plan.start_timeout,
                                plan.inference_precision) as server:
            results["log"] = str(server.log_path)
            try:
                await body(server, results)
            finally:
                results["alive_at_end"] = server.alive()
                results["peak_rss_mb"] = peak_rss_mb(server.pid)  # before it stops
    except Exception as error:  # noqa: BLE001  (a phase that fails leaves its figures out of the report)
        results["error"] = f"{type(error).__name__}: {error}"
        log(f"server {name} failed: {results['error']} (log: {scratch / f'server-{name}.log'})")
    return results


async def baselines(model: Path, plan: Plan, scratch: Path, client: ClientSettings, rate: float) -> dict:
    """The baselines, each its own server, one after the other: static batching, and one request at a time. `rate`:
    the Poisson arrivals the playback server was offered."""
    phases = {}

    async def static(server, results):
        await sweep(server, plan, plan.static_rooms, client, results)
        await poisson(server, plan, rate, client, results)

    # A baseline with nothing to run (--static-rooms "" and no Poisson run; --serial-rooms "") is not started.
    if plan.static_rooms or plan.poisson_requests:
        phases["static"] = await server_phase("static", model, {"engine": {"policy": "static"}}, plan, scratch,
                                              static)

    async def serial(server, results):
        await sweep(server, plan, plan.serial_rooms, client, results)

    if plan.serial_rooms:
        phases["max_batch_1"] = await server_phase("max_batch_1", model, {"engine": {"max_batch": 1}}, plan,
                                                   scratch, serial)
    return phases
