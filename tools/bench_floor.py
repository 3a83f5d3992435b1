"""The physical limit: this machine's memory bandwidth and matmul throughput in each arithmetic it has (f32, bf16,
int8), the bytes and FLOPs of one frame per stage, and each stage's measured time as a multiple of its floor.

    python tools/bench_floor.py --model DIR [--batches 1,8] [--json out.json]
    python tools/bench_floor.py --quick          # tiny model (CI: the script keeps working)

Floors, per step of B requests:
- bytes: every weight of a graph is read once per infer (at batch 1 no cache holds a 0.6B graph's weights), so
  talker = its weight bytes / bandwidth; code predictor = its layer weights read by each of its 15 steps + each
  output head once (each step runs the body, then its own head: the runner splits the heads off at load);
- compute: 2 x multiply-accumulates of the matrix products for B rows (code predictor: 16 rows a frame, its
  2-position prefill and 14 steps), at the best rate OpenVINO reaches here in any arithmetic the CPU has
  (chorus_tools/arithmetic.py: f32, bf16 dot products, int8 VNNI/AMX; a FullyConnected at 8, 64 and 256 rows):
  what the stage could reach if it computed in the CPU's cheapest arithmetic;
- codec decoder: its convolutions' and matrix products' FLOPs per second of audio at the rate of the precision it is
  served at (engine.codec_precision auto), timed at that precision.
A stage's floor is the larger of its bytes and compute floors; the report gives measured / floor. Times come from
tools/bench_engine.py's own measurements (talker alone; whole frame - talker = code predictor + sampling).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("CI", "true")  # OpenVINO's telemetry opt-out, before anything imports it

from chorus_tools.engine_bench import bench_batch, bench_codec  # noqa: E402
from chorus_tools.floors import codec_floor, graph_figures, measure_machine, stage_floors_ms  # noqa: E402
from wyoming_chorus.cpu import cpu_facts  # noqa: E402
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions  # noqa: E402
from wyoming_chorus.export.builtin import resolve_model  # noqa: E402
from wyoming_chorus.modeldir.manifest import ModelDir  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a model directory (default: builtin:tiny with --quick)")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    directory = Path(args.model) if args.model else resolve_model("builtin:tiny")
    batches = [1, 2] if args.quick else [int(b) for b in args.batches.split(",")]
    steps = 3 if args.quick else args.steps
    model = ModelDir(directory)

    machine = measure_machine()
    bandwidth, rates, best = machine.bandwidth_gb_s, machine.rates, machine.best
    figures = graph_figures(model)
    runner = PagedRunner(model, RunnerOptions(device="CPU", kv_cache_bytes=1 << 30))
    rows = []
    for batch in batches:
        measured = bench_batch(model, runner, batch, 32 if args.quick else 128, steps)
        floors = stage_floors_ms(figures, batch, machine)
        predictor_ms = measured["frame_ms"] - measured["talker_ms"]
        rows.append({"batch": batch, "talker_ms": measured["talker_ms"], "talker_floor_ms": floors["talker"],
                     "predictor_ms": predictor_ms, "predictor_floor_ms": floors["code_predictor"]})
    served, codec_rate, codec_floor_ms = codec_floor(directory, machine)
    codec_ms = bench_codec(directory, 28 if args.quick else 52, served)
    isa = cpu_facts().isa  # from CPUID: what the kernels dispatched on

    print(f"model {directory}, weights {model.manifest.weights}, ISA {isa}")
    print(f"memory bandwidth {bandwidth:.1f} GB/s")
    for t in rates.values():
        print(f"{t.arithmetic:>5} FullyConnected ({t.kernel}): " +
              ", ".join(f"{g:.0f} GFLOP/s at {m} rows" for m, g in t.gflop_s.items()))
    print(f"compute floors at the best rate: {best.arithmetic}, {best.peak:.0f} GFLOP/s")
    print(f"weights read per frame: talker {figures['talker_bytes'] / 1e6:.0f} MB, code predictor "
          f"{figures['predictor_bytes'] / 1e6:.0f} MB (15 infers)")
    print(f"{'batch':>5} {'talker ms':>10} {'floor':>7} {'x':>5} {'predictor ms':>13} {'floor':>7} {'x':>5}")
    for r in rows:
        print(f"{r['batch']:>5} {r['talker_ms']:>10.1f} {r['talker_floor_ms']:>7.1f} "
              f"{r['talker_ms'] / r['talker_floor_ms']:>5.2f} {r['predictor_ms']:>13.1f} "
              f"{r['predictor_floor_ms']:>7.1f} {r['predictor_ms'] / r['predictor_floor_ms']:>5.2f}")
    print(f"codec decoder ({served}): {codec_ms:.0f} ms per audio second, floor {codec_floor_ms:.0f} ms at "
          f"{codec_rate:.0f} GFLOP/s ({codec_ms / codec_floor_ms:.2f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"isa": isa, "bandwidth_gb_s": bandwidth,
                                               "gflop_s": {t.arithmetic: t.gflop_s for t in rates.values()},
                                               "kernels": {t.arithmetic: t.kernel for t in rates.values()},
                                               "compute_floor_arithmetic": best.arithmetic, "figures": figures,
                                               "stages": rows, "codec_precision": served, "codec_ms": codec_ms,
                                               "codec_floor_ms": codec_floor_ms}, indent=2))


if __name__ == "__main__":
    main()
