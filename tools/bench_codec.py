"""Codec decoder benchmark on random weights: whole-utterance decode (ms per second of audio) and streaming decode
(ms per frame by chunk size, and its max difference from the whole decode), per inference precision, and each
precision's audio error against f32: the RMS of the difference as a fraction of full scale (issue 17's bound: 1e-3),
beside the signal's own RMS (random weights: the error of the arithmetic, not of a voice).

Each figure is wall time and, in brackets, CPU time of all the process's threads: on a shared machine the CPU time
is the steadier measure of the work (on idle cores, wall ~ CPU time / threads).

    python tools/bench_codec.py [--preset real|tiny] [--frames 48] [--chunks 4 12] [--blocks 4] [--precisions "" f32]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import openvino as ov

from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder
from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
from wyoming_chorus.graphs.codec_decoder import build_codec_decoder

SECONDS_PER_FRAME = 0.08


def best_of(runs: int, work) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of `runs` calls, after one warm-up call (the first infer builds kernels)."""
    work()
    times = []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(times)


def rms(samples: np.ndarray) -> float:
    """Root mean square, in units of full scale (the decoder's samples span [-1, 1])."""
    return float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="real", choices=sorted(CODEC_PRESETS))
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--chunks", type=int, nargs="+", default=[4, 12], help="frames per push")
    parser.add_argument("--blocks", type=int, nargs="+", default=[4], help="frames per decoder call")
    parser.add_argument("--precisions", nargs="+", default=["", "f32"], help='"" = the plugin default')
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    config = CODEC_PRESETS[args.preset]
    weights = random_codec_decoder_weights(config, np.random.default_rng(0))
    stateless, stateful = build_codec_decoder(weights, config, stateful=False), build_codec_decoder(weights, config)
    codes = np.random.default_rng(1).integers(0, config["codebook_size"], (1, config["num_quantizers"], args.frames))
    reference = ov.Core().compile_model(stateless, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})({"codes": codes})
    exact = reference["audio"][0, 0].copy()
    for precision in args.precisions:
        compiled = ov.Core().compile_model(stateless, "CPU",
                                           {"INFERENCE_PRECISION_HINT": precision} if precision else {})
        name = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        whole = compiled({"codes": codes})["audio"][0, 0].copy()
        wall, cpu = best_of(args.runs, lambda: compiled({"codes": codes}))
        audio_seconds = args.frames * SECONDS_PER_FRAME
        print(f"{name}: whole decode of {args.frames} frames: {wall / audio_seconds * 1000:.0f} "
              f"[{cpu / audio_seconds * 1000:.0f}] ms per second of audio; RMS error vs f32 "
              f"{rms(whole - exact):.1e} of full scale (signal RMS {rms(exact):.2f}, max |error| "
              f"{np.abs(whole - exact).max():.1e})")
        for block in args.blocks:
            decoder = StreamingCodecDecoder(stateful, precision, block_frames=block)
            for chunk in args.chunks:
                pieces: list[np.ndarray] = []

                def stream() -> None:
                    state = decoder.new_stream()
                    pieces[:] = [decoder.push(state, codes[0, :, i: i + chunk].T) for i in range(0, args.frames, chunk)]

                wall, cpu = best_of(args.runs, stream)
                error = np.abs(np.concatenate(pieces) - whole).max()
                print(f"{name}: streaming, blocks of {block}, pushes of {chunk} frames: "
                      f"{wall / args.frames * 1000:.1f} [{cpu / args.frames * 1000:.1f}] ms per frame, "
                      f"max |streamed - whole| {error:.1e}")

if __name__ == "__main__":
    main()
