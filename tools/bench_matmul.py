"""The compressed-weight products on the project's kernel against the plugin's, in one process.

    python tools/bench_matmul.py --model MODELS/0.6b-int8 --batches 1,8,16 --pairs 30

Two runners of one model directory, engine.native_matmul on and off, each with its own engine core and requests;
their engine steps (whole frames: talker, codebook 0, the 15 code-predictor calls) alternate A-B-A-B, so load
drift on a shared machine falls on both alike. Prints each one's median frame and talker-alone ms by batch and
the ratio of medians (native / plugin). Where the kernel does not apply (neither AVX-512 VNNI nor AVX2, float
weights, bf16 arithmetic) it says so and stops. `CHORUS_MATMUL_ISA=avx2` times the kernel's AVX2 build on a newer CPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from chorus_tools.engine_bench import start_batch
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.scheduler import ScheduledEntry
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.lm_precision import lm_precision
from wyoming_chorus.modeldir.manifest import ModelDir


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return (time.perf_counter() - started) * 1000


def alternate(runs: dict[str, object], pairs: int) -> dict[str, float]:
    """Median ms of each run, over `pairs` rounds of all of them in turn (after one warm-up each)."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(pairs):
        for name, run in runs.items():
            samples[name].append(timed(run))
    return {name: statistics.median(values) for name, values in samples.items()}


def talker_only(runner: PagedRunner, seqs):
    """The talker alone: each request's last row again, no frame emitted (no state changes)."""
    return lambda: runner.step([ScheduledEntry(s, s.num_computed - 1, 1, False) for s in seqs if not s.is_finished])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model directory with INT8 or INT4 weights (default: builtin:tiny)")
    parser.add_argument("--batches", default="1,8,16")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--context", type=int, default=128, help="prompt rows per request before timing")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)

    model = ModelDir(Path(args.model) if args.model else resolve_model("builtin:tiny"))
    facts = cpu_facts()
    lm = lm_precision("", model.manifest.weights, "CPU", facts, "u8")
    runners = {name: PagedRunner(model, RunnerOptions(device="CPU", inference_precision=lm.hint,
                                                      kv_cache_bytes=256 << 20, native_matmuls=native))
               for name, native in (("native", True), ("plugin", False))}
    native = runners["native"].native_matmuls
    print(f"model {model}  weights {model.manifest.weights}  CPU {facts.isa}  language models in "
          f"{facts.inference_precision(lm.hint)}  MatMuls on the kernel: talker {native[0]}, "
          f"code predictor {native[1]}")
    if native == (0, 0):
        print("bench_matmul: the kernel does not apply here (it needs AVX-512 VNNI or AVX2, INT8 or INT4 weights "
              "and f32 arithmetic)", file=sys.stderr)
        sys.exit(2)
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        cores = {name: start_batch(model, runner, batch, args.context, frame_cap=4 * args.pairs + 16,
                                   inference_precision=lm.hint) for name, runner in runners.items()}

        frames = alternate({name: cores[name][0].step for name in runners}, args.pairs)
        talkers = alternate({name: talker_only(runners[name], cores[name][1]) for name in runners}, args.pairs)
        row = {"batch": batch, "frame_ms": frames, "talker_ms": talkers,
               "frame_ratio": frames["native"] / frames["plugin"],
               "talker_ratio": talkers["native"] / talkers["plugin"]}
        rows.append(row)
        print(f"batch {batch:>2}: frame {frames['native']:.1f} vs {frames['plugin']:.1f} ms "
              f"({row['frame_ratio']:.2f}x), talker {talkers['native']:.1f} vs {talkers['plugin']:.1f} ms "
              f"({row['talker_ratio']:.2f}x)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": facts.isa, "weights": model.manifest.weights,
                                               "native_matmuls": native, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
