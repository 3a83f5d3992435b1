"""Which kernels the CPU plugin really runs for a model directory: the talker, the code predictor and the codec
decoder, each op's layer type, kernel and precision from the executed graph, counted.

Why: a figure is only as AVX2 as its kernels. `ONEDNN_MAX_CPU_ISA=AVX2` limits oneDNN's kernels, but some of the
plugin's own kernels (MLAS gemm, PagedAttention, the compressed-weight FullyConnected's microkernels) dispatch on
the CPU's ISA by themselves; a benchmark run under the limit on an AMX machine is only an AVX2 figure for the ops
whose kernel names say so. Compare two runs:

    python tools/kernels.py models/0.6b-int4
    ONEDNN_MAX_CPU_ISA=AVX2 python tools/kernels.py models/0.6b-int4 --inference-precision f32
"""
from __future__ import annotations

import argparse
import collections
import os
from pathlib import Path

from chorus_tools.engine_bench import start_batch
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.codec_precision import choose_codec_decoder
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.modeldir.manifest import ModelDir

# Layer types that do the work (products, attention, norms, elementwise and their fused subgraphs, lookups); the rest
# (reshapes, converts, inputs) are listed with --all.
HEAVY = ("CompressedMatMul", "FullyConnected", "PagedAttention", "MatMul", "ScaledDotProductAttention", "Convolution",
         "Deconvolution", "Subgraph", "Eltwise", "RMS", "Gather")


def codec_kernels(model: ModelDir, precision: str) -> list[tuple[str, str, str, str]]:
    choice = choose_codec_decoder(model / "codec_decoder.xml", model.manifest.codebook_size, precision)
    stream = choice.decoder.new_stream()
    choice.decoder.push(stream, [[0] * choice.decoder.num_quantizers] * choice.decoder.block_frames)
    out = []
    for op in choice.decoder.runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        out.append(("codec", *(rt[key].astype(str) if key in rt else "" for key in
                               ("layerType", "primitiveType", "runtimePrecision"))))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--inference-precision", default="", help='"" = the plugin default')
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--all", action="store_true", help="every layer type, not only the heavy ones")
    args = parser.parse_args(argv)

    model = ModelDir(args.model)
    runner = PagedRunner(model, RunnerOptions(device="CPU", inference_precision=args.inference_precision,
                                              num_blocks=64))
    core, _ = start_batch(model, runner, args.batch, 16, frame_cap=8, inference_precision=args.inference_precision)
    core.step()
    kernels = runner.kernels() + codec_kernels(model, args.inference_precision or "auto")
    counts = collections.Counter(k for k in kernels if args.all or k[1] in HEAVY)
    print(f"model {args.model} ({model.manifest.weights} weights), CPU {cpu_facts().isa}, "
          f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '(unset)')}, "
          f"inference precision {args.inference_precision or '(default)'}")
    print(f"{'graph':<15} {'layer':<26} {'kernel':<34} {'precision':<10} {'ops':>4}")
    for (graph, layer, kernel, precision), n in sorted(counts.items()):
        print(f"{graph:<15} {layer:<26} {kernel:<34} {precision:<10} {n:>4}")


if __name__ == "__main__":
    main()
