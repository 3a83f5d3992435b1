"""Logit error of a weight-compressed model directory against the float one it was made from.

    python tools/compress_fidelity.py --reference models/0.6b --model models/0.6b-int8

Both talkers (and code predictors) are compiled stateful at f32 inference with an f32 KV cache, so the only
difference left is the weights (and, for INT8/INT4 weights, the plugin's on-the-fly activation quantisation, which
serving has too); `--inference-precision bf16` compiles the model side at bf16 instead, to compare with the
plugin default on float weights. The inputs are rows of the model's own codec embedding table (the scale the talker
sees in service): a `--context`-row prefill, then `--decode` one-row steps; every call's last-row codebook-0 logits
are compared. With random weights this measures numerical error, not audio quality.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import openvino as ov
from safetensors.numpy import load_file


def config(precision: str) -> dict:
    # The CPU plugin refuses an f32 KV cache under a bf16 hint: the cache then follows the hint.
    return {"INFERENCE_PRECISION_HINT": precision, "KV_CACHE_PRECISION": precision}


def talker_logits(core: ov.Core, xml: Path, rows: np.ndarray, context: int, precision: str) -> np.ndarray:
    """Last-row logits of a `context`-row prefill, then of each following row fed one at a time."""
    request = core.compile_model(xml, "CPU", config(precision)).create_infer_request()
    out, past = [], 0
    for chunk in [rows[:context]] + [rows[i:i + 1] for i in range(context, len(rows))]:
        n = len(chunk)
        request.infer({"inputs_embeds": chunk[None], "attention_mask": np.ones((1, past + n), np.int64),
                       "position_ids": np.arange(past, past + n, dtype=np.int64)[None],
                       "beam_idx": np.zeros(1, np.int32)})
        out.append(request.get_tensor("logits").data[0, -1].copy())
        past += n
    return np.stack(out)


def code_predictor_logits(core: ov.Core, xml: Path, rows: np.ndarray, precision: str) -> np.ndarray:
    """One frame: a 2-row prefill for head 0, then one row per head 1..14."""
    request = core.compile_model(xml, "CPU", config(precision)).create_infer_request()
    request.reset_state()
    out = []
    for head, chunk in enumerate([rows[:2]] + [rows[i:i + 1] for i in range(2, 16)]):
        request.infer({"inputs_embeds": chunk[None], "head_index": np.array(head, np.int64)})
        out.append(request.get_tensor("logits").data[0].copy())
    return np.stack(out)


def report(name: str, reference: np.ndarray, model: np.ndarray) -> None:
    error = np.abs(model - reference)
    scale = np.abs(reference).max()
    l2 = np.linalg.norm(model - reference, axis=-1) / np.linalg.norm(reference, axis=-1)
    top1 = np.mean(model.argmax(-1) == reference.argmax(-1))
    print(f"{name}: max abs {error.max():.4f} (max |ref| {scale:.3f}, {error.max() / scale:.2%} of it), "
          f"mean rel L2 {l2.mean():.2%}, top-1 agreement {top1:.0%} over {len(reference)} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="the float model directory")
    parser.add_argument("--model", type=Path, required=True, help="its compressed copy")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--decode", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inference-precision", default="f32", choices=["f32", "bf16"],
                        help="for --model only (the reference runs at f32): bf16 shows the plugin default's error")
    args = parser.parse_args()

    tables = load_file(str(args.reference / "embeddings.safetensors"))
    rng = np.random.default_rng(args.seed)
    codec = tables["codec_embedding"]
    rows = codec[rng.integers(0, 2048, args.context + args.decode)].astype(np.float32)
    frame = codec[rng.integers(0, 2048, 16)].astype(np.float32)
    core = ov.Core()
    precision = args.inference_precision
    report("talker codebook-0 logits",
           talker_logits(core, args.reference / "talker.xml", rows, args.context, "f32"),
           talker_logits(core, args.model / "talker.xml", rows, args.context, precision))
    report("code predictor logits",
           code_predictor_logits(core, args.reference / "code_predictor.xml", frame, "f32"),
           code_predictor_logits(core, args.model / "code_predictor.xml", frame, precision))


if __name__ == "__main__":
    main()
