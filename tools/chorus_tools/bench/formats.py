"""tools/bench.py with `--model a,b`: the per-format rows of the summary. Every model dir gets the engine level (each
stage against its floor at batch 1 and at the running batch) and one room end to end through a playback server; the
household part (A-B-A-B, the baselines) runs on the first alone."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from chorus_tools.bench.phases import measured, row, server_phase
from chorus_tools.bench.plan import BENCH_SEED, Plan, log
from chorus_tools.bench.summary import pooled
from chorus_tools.bench.workloads import ClientSettings, burst_specs, run_specs


def labels(directories: list[Path]) -> list[str]:
    """Each model's weights in words (the manifest's weights_label), with its folder where two would read alike."""
    from wyoming_chorus.modeldir.manifest import ModelDir

    plain = [ModelDir(d).manifest.weights_label for d in directories]
    twice = {label for label, n in Counter(plain).items() if n > 1}
    return [f"{label} ({d.name})" if label in twice else label for label, d in zip(plain, directories, strict=True)]


async def one_room(name: str, model: Path, plan: Plan, scratch: Path, client: ClientSettings) -> dict:
    """One room's reply, `plan.rounds` times on a playback server of its own: its row pooled over the rounds."""
    specs = burst_specs(1, BENCH_SEED, plan.mode, plan.readout_words)

    async def body(server, results):
        rounds = []
        for _ in range(plan.rounds):
            rounds.append(await measured(server, run_specs(f"{name} burst 1", server.port, specs, client)))
        results["scenarios"] += rounds
        results["one_room"] = row(pooled(rounds), rooms=1)
        log(f"  {name}: one room RTF p50 {results['one_room']['rtf_p50']}")

    return await server_phase(name, model, {}, plan, scratch, body)


def running_batch(sweep: list[dict]) -> int:
    """The mean batch the playback server ran at its largest burst, rounded (1 when no burst ran)."""
    largest = max(sweep, key=lambda r: r["rooms"], default={})
    return max(1, round(largest.get("server_batch_mean") or 1))


def floors_of(directory: Path, batches: list[int], machine) -> dict:
    """Each stage's floor at each batch, and the codec's (chorus_tools/floors.py), for the summary."""
    from chorus_tools.floors import codec_floor, graph_figures, stage_floors_ms
    from wyoming_chorus.modeldir.manifest import ModelDir

    figures = graph_figures(ModelDir(directory))
    served, rate, codec_ms = codec_floor(directory, machine)
    return {"floors": {str(b): stage_floors_ms(figures, b, machine) for b in batches}, "codec_floor_ms": codec_ms,
            "codec_precision": served}
