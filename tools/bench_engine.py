"""Engine benchmark: ms per step by batch size (talker alone, whole frame), aggregate frames/s, codec decode cost,
and KV bytes per token by precision.

    python tools/bench_engine.py                 # 0.6b preset (random weights, real dimensions)
    python tools/bench_engine.py --quick         # tiny model, two batch sizes: a smoke run for CI

Each batch size starts B requests whose prompts are `--context` rows long, prefills them, then times decode steps.
"Talker alone" re-runs each request's last row with no frame emitted (same position, same KV: no state changes);
"frame" is a real engine step (EngineCore.step: messages, schedule, the runner's talker + codebook-0 sampling + the 15
code-predictor steps + next input embedding, update); "host" is that step's time outside the runner.
Figures are medians over `--steps` steps of one run; the machine is shared, so compare ratios, not absolutes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from chorus_tools.engine_bench import bench_batch, bench_codec, kv_bytes_per_token
from chorus_tools.models import preset_model, served_codec
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.lm_precision import ActivationGroups, lm_precision
from wyoming_chorus.modeldir.manifest import ModelDir


def model_dir(args) -> Path:
    if args.model:
        return Path(args.model)
    if args.quick:
        return resolve_model("builtin:tiny")
    return preset_model(Path(args.cache), args.preset)


def batched_note(groups: ActivationGroups) -> str:
    if not groups.batched_from:
        return ""
    return f" ({groups.batched or 'the default'} in the code predictor from batch {groups.batched_from})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="0.6b", choices=["0.6b", "1.7b"])
    parser.add_argument("--model", help="an existing model directory (overrides --preset)")
    parser.add_argument("--cache", default="models", help="where presets are built once and reused")
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--context", type=int, default=128, help="prompt rows per request before timing")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--kv-precision", default="u8")
    parser.add_argument("--inference-precision", default="")
    parser.add_argument("--activation-group", type=int,
                        help="DYNAMIC_QUANTIZATION_GROUP_SIZE of the talker and code predictor at every batch (0 = "
                             "off; default: the runner's rule, lm_precision.py): an A/B of the rule against "
                             "the plugin's 32")
    parser.add_argument("--quick", action="store_true", help="tiny model, batches 1 and 4, 4 steps (CI)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.batches, args.steps, args.context = "1,4", 4, 32

    directory = model_dir(args)
    batches = [int(b) for b in args.batches.split(",")]
    # The talker and code predictor at the precision the server would choose (lm_precision.py).
    lm = lm_precision(args.inference_precision, ModelDir(directory).manifest.weights, "CPU", cpu_facts(),
                      args.kv_precision)
    try:
        runner = PagedRunner(ModelDir(directory), RunnerOptions(
            device="CPU", kv_precision=args.kv_precision, inference_precision=lm.hint, kv_cache_bytes=1 << 30,
            activation_groups=None if args.activation_group is None else ActivationGroups(args.activation_group)))
    except SetupError as error:  # e.g. --kv-precision bf16 on an AVX2 CPU: one line, exit 2 as the server does
        print(f"bench_engine: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"model {directory}  device {runner.device}  kv {runner.kv_precision}  block {runner.block_size}  "
          f"blocks {runner.num_blocks}  talker and code predictor in {cpu_facts().inference_precision(lm.hint)} "
          f"({lm.reason}), activations quantised in groups of {runner.activation_group or 'none (off)'}"
          f"{batched_note(runner.activation_groups)}")
    rows = [bench_batch(ModelDir(directory), runner, b, args.context, args.steps, args.inference_precision or "")
            for b in batches]
    print(f"{'batch':>5} {'talker ms':>10} {'frame ms':>9} {'host ms':>8} {'frames/s':>9}")
    for r in rows:
        print(f"{r['batch']:>5} {r['talker_ms']:>10.1f} {r['frame_ms']:>9.1f} {r['host_ms']:>8.3f} "
              f"{r['frames_per_s']:>9.1f}")
    base = rows[0]["frames_per_s"]
    for r in rows[1:]:
        print(f"aggregate frames/s at batch {r['batch']} = {r['frames_per_s'] / base:.2f}x batch {rows[0]['batch']}")

    # With --inference-precision the codec runs at that precision only, as the server's would (engine.codec_precision
    # auto follows it; under ONEDNN_MAX_CPU_ISA=AVX2 the plugin's default bf16 codec does not even compile).
    precisions = (args.inference_precision,) if args.inference_precision else ("", "f32")
    codec = {p or "default": bench_codec(directory, 28 if args.quick else 52, p) for p in precisions}
    for precision, ms in codec.items():
        print(f"codec decode ({precision} precision): {ms:.0f} ms per second of audio")
    choice = served_codec(directory, args.inference_precision or "")
    print(f"codec precision served (engine.codec_precision auto): {choice.precision}: {choice.reason}")
    kv, skipped = {}, {}
    for precision in ("u8", "bf16"):
        try:
            kv[precision] = kv_bytes_per_token(directory, precision)
            print(f"KV bytes per token, {precision}: {kv[precision]:.0f}")
        except SetupError as error:  # a row this device lacks
            skipped[f"kv_bytes_per_token.{precision}"] = str(error)
            print(f"KV bytes per token, {precision}: skipped: {error}")
    if len(kv) == 2:
        print(f"KV u8 = {kv['u8'] / kv['bf16']:.0%} of bf16")
    if args.json:
        Path(args.json).write_text(json.dumps({"steps": rows, "codec_ms_per_audio_s": codec,
                                               "codec_served": [choice.precision, choice.reason],
                                               "kv_bytes_per_token": kv,
                                               "skipped": skipped}, indent=2))


if __name__ == "__main__":
    main()
