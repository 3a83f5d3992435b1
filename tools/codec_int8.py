"""INT8 codec decoder probe: where the bf16 codec's time goes per op type, and INT8 variants of it (NNCF post-training
quantisation of weights and activations, calibrated on codes) timed against bf16 and measured against f32.

    python tools/codec_int8.py [--preset real] [--frames 48] [--pairs 7] [--variants naive conv ...] [--profile]

Every decoder is served as the engine serves it (stateful, blocks of 4 frames, engine/streaming_codec.py); the
INT8 graphs keep the plugin's default precision (bf16 here) for what is not quantised. Timing alternates bf16 and the
variant one push of `--frames` frames at a time (the machine may be shared): the median of the paired ratios, and
each one's median CPU time of all the process's threads per second of audio. Error: RMS of the difference from the
f32 decode of held-out codes, as a fraction of full scale (engine.codec_precision's bound: 1e-3) and of the signal's
RMS (random weights: the error of the arithmetic, comparable across weight scales). The kernels line counts the
executed graph's convolutions by runtime precision: u8/i8 means VNNI kernels really run. (NNCF 3.4's full
BiasCorrection, fast_bias_correction=False, fails on this stateful graph: a KeyError in its output insertion.)
"""
from __future__ import annotations

import argparse
import collections
import logging
import os
import statistics
import time

os.environ.setdefault("CI", "true")  # OpenVINO's telemetry opt-out, before anything imports it

import nncf  # noqa: E402
import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
from nncf.quantization.range_estimator import RangeEstimatorParametersSet  # noqa: E402

from wyoming_chorus.cpu import cpu_facts  # noqa: E402
from wyoming_chorus.engine.streaming_codec import BLOCK_FRAMES, SAMPLES_PER_FRAME, StreamingCodecDecoder  # noqa: E402
from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights  # noqa: E402
from wyoming_chorus.graphs.codec_decoder import build_codec_decoder  # noqa: E402

SECONDS_PER_FRAME = SAMPLES_PER_FRAME / 24000
# Elementwise and normalisation ops NNCF would otherwise quantise too: the variants that keep them in float.
_ELEMENTWISE = ["Add", "Multiply", "Subtract", "Divide", "Maximum", "Minimum", "MVN", "Gelu", "Round", "Clamp",
                "Concat", "ScaledDotProductAttention", "Power", "Sqrt", "ReduceMean", "Swish", "Sigmoid"]


def last_conv(model: ov.Model) -> str:
    """The friendly name of the final convolution (audio <- clamp <- add bias <- conv)."""
    node = model.output("audio").get_node().input_value(0).get_node()
    while node.get_type_name() != "Convolution":
        node = node.input_value(0).get_node()
    return node.get_friendly_name()


def variant_options(name: str, model: ov.Model) -> dict:
    """nncf.quantize keyword arguments of each variant."""
    convs_only = nncf.IgnoredScope(types=_ELEMENTWISE + ["MatMul"], validate=False)
    options = {
        "naive": {},  # the whole graph, NNCF's defaults (the earlier experiment)
        "conv": {"ignored_scope": convs_only},
        "conv-mixed": {"ignored_scope": convs_only, "preset": nncf.QuantizationPreset.MIXED},
        "conv+matmul": {"ignored_scope": nncf.IgnoredScope(types=_ELEMENTWISE, validate=False),
                        "preset": nncf.QuantizationPreset.MIXED},
        "conv-last-float": {"ignored_scope": nncf.IgnoredScope(types=_ELEMENTWISE + ["MatMul"],
                                                               names=[last_conv(model)], validate=False),
                            "preset": nncf.QuantizationPreset.MIXED},
        # Activation ranges from the mean of each sample's quantiles instead of the extremes: less clipping noise
        # for the bulk of the signal, at the cost of clipped peaks.
        "conv-quantile": {"ignored_scope": convs_only, "advanced_parameters": nncf.AdvancedQuantizationParameters(
            activations_range_estimator_params=RangeEstimatorParametersSet.MEAN_QUANTILE)},
    }
    return options[name]


def quantize(model: ov.Model, name: str, blocks: list[np.ndarray]) -> ov.Model:
    return nncf.quantize(model.clone(), nncf.Dataset([{"codes": b} for b in blocks]), subset_size=len(blocks),
                         **variant_options(name, model))


def blocks_of(codes: np.ndarray) -> list[np.ndarray]:
    """[frames, Q] -> the decoder's [1, Q, BLOCK_FRAMES] inputs (the frame count a multiple of the block)."""
    return [codes[i: i + BLOCK_FRAMES].T[None].astype(np.int64) for i in range(0, len(codes), BLOCK_FRAMES)]


def decode(decoder: StreamingCodecDecoder, codes: np.ndarray) -> np.ndarray:
    return decoder.push(decoder.new_stream(), codes).astype(np.float64)


def seconds(decoder: StreamingCodecDecoder, codes: np.ndarray) -> tuple[float, float]:
    """(CPU, wall) seconds of one streamed decode."""
    cpu, wall = time.process_time(), time.perf_counter()
    decode(decoder, codes)
    return time.process_time() - cpu, time.perf_counter() - wall


def paired(base: StreamingCodecDecoder, other: StreamingCodecDecoder, codes: np.ndarray, pairs: int):
    """Medians over pairs alternating who goes first: the other/base CPU time ratio, and base's and other's
    (CPU, wall) ms per audio second."""
    decode(base, codes), decode(other, codes)
    times = []
    for i in range(pairs):
        order = (base, other) if i % 2 == 0 else (other, base)
        first, second = (seconds(d, codes) for d in order)
        times.append((first, second) if i % 2 == 0 else (second, first))
    per_second = 1000 / (len(codes) * SECONDS_PER_FRAME)

    def ms(which: int, kind: int) -> float:
        return statistics.median(pair[which][kind] for pair in times) * per_second

    return statistics.median(o[0] / b[0] for b, o in times), (ms(0, 0), ms(0, 1)), (ms(1, 0), ms(1, 1))


def conv_precisions(decoder: StreamingCodecDecoder) -> str:
    counts: collections.Counter = collections.Counter()
    for op in decoder.runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        if "layerType" in rt and rt["layerType"].astype(str) == "Convolution":
            counts[rt["runtimePrecision"].astype(str)] += 1
    return ", ".join(f"{n} {p}" for p, n in counts.most_common())


def profile(model: ov.Model, codes: np.ndarray, top: int) -> None:
    """CPU plugin per-op counters of one streamed decode, summed by (layer type, kernel, precision)."""
    graph = model.clone()
    graph.reshape({"codes": [1, codes.shape[1], BLOCK_FRAMES]})
    request = ov.Core().compile_model(graph, "CPU", {"PERF_COUNT": True}).create_infer_request()
    for block in blocks_of(codes):
        request.infer({"codes": block})  # warm-up
    request.reset_state()
    ops: collections.Counter = collections.Counter()
    for block in blocks_of(codes):
        request.infer({"codes": block})
        for info in request.get_profiling_info():
            if info.status == info.Status.EXECUTED:
                ops[(info.node_type, info.exec_type)] += info.real_time.total_seconds()
    total = sum(ops.values())
    audio = len(codes) * SECONDS_PER_FRAME
    print(f"  counted {total / audio * 1000:.0f} ms per audio second; by op type:")
    for (layer, kernel), seconds in ops.most_common(top):
        print(f"    {layer:<26} {kernel:<36} {seconds / total:6.1%}  {seconds / audio * 1000:6.1f} ms")


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="real", choices=sorted(CODEC_PRESETS))
    parser.add_argument("--frames", type=int, default=48, help="frames timed and compared (a multiple of 4)")
    parser.add_argument("--calibration-frames", type=int, default=96)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--variants", nargs="+", default=["naive", "conv", "conv-mixed", "conv-last-float"])
    parser.add_argument("--profile", action="store_true", help="per-op counters of bf16 and of each variant")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    nncf.set_log_level(logging.ERROR)

    config: dict = CODEC_PRESETS[args.preset]
    model = build_codec_decoder(random_codec_decoder_weights(config, np.random.default_rng(0)), config)
    model.reshape({"codes": [1, config["num_quantizers"], BLOCK_FRAMES]})
    size = config["codebook_size"]
    calibration = np.random.default_rng(1).integers(0, size, (args.calibration_frames, config["num_quantizers"]))
    held_out = np.random.default_rng(2).integers(0, size, (args.frames, config["num_quantizers"]))
    exact = decode(StreamingCodecDecoder(model, "f32"), held_out)
    bf16 = StreamingCodecDecoder(model)
    print(f"preset {args.preset}, ISA {cpu_facts().isa}, {args.frames} frames, signal RMS {rms(exact):.3f}")
    bf16_error = rms(decode(bf16, held_out) - exact)
    print(f"bf16: RMS error vs f32 {bf16_error:.1e} of full scale ({bf16_error / rms(exact):.2%} of the signal); "
          f"convolutions {conv_precisions(bf16)}")
    if args.profile:
        profile(model, held_out, args.top)
    for name in args.variants:
        started = time.perf_counter()
        quantized = quantize(model, name, blocks_of(calibration))
        took = time.perf_counter() - started
        decoder = StreamingCodecDecoder(quantized)
        error = rms(decode(decoder, held_out) - exact)
        ratio, base_ms, own_ms = paired(bf16, decoder, held_out, args.pairs)
        print(f"{name}: quantised in {took:.0f} s; RMS error vs f32 {error:.1e} of full scale "
              f"({error / rms(exact):.2%} of the signal, {error / bf16_error:.1f}x bf16's); CPU time vs bf16 "
              f"{ratio:.2f}x (median of {args.pairs} pairs, ms per audio second, CPU / wall: {own_ms[0]:.0f} / "
              f"{own_ms[1]:.0f} vs {base_ms[0]:.0f} / {base_ms[1]:.0f}); convolutions {conv_precisions(decoder)}")
        if args.profile:
            profile(quantized, held_out, args.top)


if __name__ == "__main__":
    main()
