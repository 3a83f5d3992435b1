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

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402

from chorus_tools.arithmetic import arithmetics, bandwidth_gb_s, throughput  # noqa: E402
from chorus_tools.engine_bench import bench_batch, bench_codec  # noqa: E402
from wyoming_chorus.cpu import cpu_facts  # noqa: E402
from wyoming_chorus.engine.codec_precision import choose_codec_decoder  # noqa: E402
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions  # noqa: E402
from wyoming_chorus.export.builtin import resolve_model  # noqa: E402
from wyoming_chorus.modeldir.manifest import ModelDir  # noqa: E402

CODEC_BLOCK_FRAMES = 4
FRAMES_PER_SECOND = 12.5


def constants(path: Path) -> list[tuple[str, int, int]]:
    """(name, bytes, elements) of each weight constant of a graph (1-element constants left out)."""
    out = []
    for node in ov.Core().read_model(path).get_ops():
        if node.get_type_name() == "Constant":
            shape = [int(d) for d in node.get_output_shape(0)]
            elements = int(np.prod(shape)) if shape else 1
            if elements > 1:
                # bitwidth, not size: an INT4 weight takes half a byte, and Type.size rounds it up to one.
                bytes_ = elements * node.get_output_element_type(0).bitwidth // 8
                out.append((node.get_friendly_name(), bytes_, elements))
    return out


def graph_figures(model: ModelDir) -> dict:
    """Weight bytes read per frame and multiply-accumulates per row, talker and code predictor."""
    talker = constants(model / "talker.xml")
    predictor = constants(model / "code_predictor.xml")
    heads = max(predictor, key=lambda c: c[2])  # the 15 output heads: one [15, codebook, H] table
    layers = [c for c in predictor if c is not heads]
    # A matrix weight does one multiply-accumulate per element per row; norms and biases are noise next to them.
    return {
        "talker_bytes": sum(b for _, b, _ in talker),
        "talker_macs_per_row": sum(e for _, _, e in talker),
        "predictor_bytes": 15 * sum(b for _, b, _ in layers) + heads[1],
        "predictor_macs_per_frame": 16 * sum(e for _, _, e in layers) + heads[2],
    }


def codec_gflop_per_audio_s(model: ModelDir) -> float:
    """FLOPs of the codec decoder per second of audio: its convolutions, transposed convolutions and matrix
    products, counted from the graph with a block of CODEC_BLOCK_FRAMES frames."""
    graph = ov.Core().read_model(model / "codec_decoder.xml")
    quantizers = graph.input("codes").get_partial_shape()[1].get_length()
    graph.reshape({"codes": [1, quantizers, CODEC_BLOCK_FRAMES]})
    flops = 0
    for node in graph.get_ordered_ops():
        kind = node.get_type_name()
        if kind in ("Convolution", "GroupConvolution", "ConvolutionBackpropData", "MatMul"):
            weights = [int(d) for d in node.get_input_partial_shape(1).to_shape()]
            out = [int(d) for d in node.get_output_partial_shape(0).to_shape()]
            if kind == "MatMul":  # out [.., M, N] from [.., M, K]: K multiply-accumulates per output
                inp = [int(d) for d in node.get_input_partial_shape(0).to_shape()]
                flops += 2 * int(np.prod(out)) * (inp[-2] if node.get_transpose_a() else inp[-1])
            elif kind == "ConvolutionBackpropData":  # weights [C_in, C_out, k]: each input sample to k outputs
                inp = [int(d) for d in node.get_input_partial_shape(0).to_shape()]
                flops += 2 * int(np.prod(inp)) * int(np.prod(weights[1:]))
            else:  # [C_out, C_in / groups, k] (grouped: [groups, C_out / groups, C_in / groups, k])
                flops += 2 * int(np.prod(out)) * int(np.prod(weights[-2:]))
    return flops / (CODEC_BLOCK_FRAMES / FRAMES_PER_SECOND) / 1e9


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

    bandwidth = bandwidth_gb_s()
    rates = {name: throughput(name) for name in arithmetics()}
    best = max(rates.values(), key=lambda t: t.peak)
    figures = graph_figures(model)
    runner = PagedRunner(model, RunnerOptions(device="CPU", kv_cache_bytes=1 << 30))
    rows = []
    for batch in batches:
        measured = bench_batch(model, runner, batch, 32 if args.quick else 128, steps)
        talker_floor = max(figures["talker_bytes"] / bandwidth / 1e6,
                           2 * figures["talker_macs_per_row"] * batch / best.peak / 1e6)
        predictor_floor = max(figures["predictor_bytes"] / bandwidth / 1e6,
                              2 * figures["predictor_macs_per_frame"] * batch / best.peak / 1e6)
        predictor_ms = measured["frame_ms"] - measured["talker_ms"]
        rows.append({"batch": batch, "talker_ms": measured["talker_ms"], "talker_floor_ms": talker_floor,
                     "predictor_ms": predictor_ms, "predictor_floor_ms": predictor_floor})
    # The codec at the precision the server would serve it in, against that arithmetic's rate (f16: none probed
    # here, an f16 codec counts at the f32 rate).
    served = choose_codec_decoder(directory / "codec_decoder.xml", model.manifest.codebook_size).precision
    codec_ms = bench_codec(directory, 28 if args.quick else 52, served)
    codec_rate = rates.get(served, rates["f32"])
    codec_floor = codec_gflop_per_audio_s(model) / codec_rate.peak * 1000
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
    print(f"codec decoder ({served}): {codec_ms:.0f} ms per audio second, floor {codec_floor:.0f} ms at "
          f"{codec_rate.peak:.0f} GFLOP/s ({codec_ms / codec_floor:.2f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"isa": isa, "bandwidth_gb_s": bandwidth,
                                               "gflop_s": {t.arithmetic: t.gflop_s for t in rates.values()},
                                               "kernels": {t.arithmetic: t.kernel for t in rates.values()},
                                               "compute_floor_arithmetic": best.arithmetic, "figures": figures,
                                               "stages": rows, "codec_precision": served, "codec_ms": codec_ms,
                                               "codec_floor_ms": codec_floor}, indent=2))


if __name__ == "__main__":
    main()
