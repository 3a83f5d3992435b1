"""The physical limit of each stage, per step of B requests: the weight bytes a frame reads and the multiply-accumulates
it does (counted from the graphs), against this machine's memory bandwidth and best arithmetic rate
(chorus_tools/arithmetic.py). tools/bench_floor.py prints them; tools/bench.py's summary sets each stage against its
floor. How each floor is counted: tools/bench_floor.py's docstring."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov

from chorus_tools.arithmetic import Throughput, arithmetics, bandwidth_gb_s, throughput
from chorus_tools.models import served_codec
from wyoming_chorus.modeldir.manifest import ModelDir

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


@dataclass(frozen=True)
class Machine:
    """What this machine streams and computes: measured once a run, shared by every model of it."""
    bandwidth_gb_s: float
    rates: dict[str, Throughput]  # by arithmetic

    @property
    def best(self) -> Throughput:
        return max(self.rates.values(), key=lambda t: t.peak)


def measure_machine(rows: tuple[int, ...] | None = None) -> Machine:
    """`rows`: the row counts each arithmetic is timed at (fewer: a quicker, rougher probe)."""
    return Machine(bandwidth_gb_s(), {name: throughput(name, *([rows] if rows else [])) for name in arithmetics()})


def stage_floors_ms(figures: dict, batch: int, machine: Machine) -> dict[str, float]:
    """The talker's and the code predictor's floor at `batch`: the larger of reading their weights and computing
    their products at the best rate."""
    bandwidth, peak = machine.bandwidth_gb_s, machine.best.peak
    return {"talker": max(figures["talker_bytes"] / bandwidth / 1e6,
                          2 * figures["talker_macs_per_row"] * batch / peak / 1e6),
            "code_predictor": max(figures["predictor_bytes"] / bandwidth / 1e6,
                                  2 * figures["predictor_macs_per_frame"] * batch / peak / 1e6)}


def codec_floor(directory: Path, machine: Machine) -> tuple[str, float, float]:
    """(the precision the server serves the codec at, that arithmetic's rate in GFLOP/s, the floor in ms per audio
    second); an f16 codec counts at the f32 rate (no f16 probe)."""
    model = ModelDir(directory)
    served = served_codec(directory).precision
    rate = machine.rates.get(served, machine.rates["f32"]).peak
    return served, rate, codec_gflop_per_audio_s(model) / rate * 1000
