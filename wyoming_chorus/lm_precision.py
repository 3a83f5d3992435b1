"""The precision the talker and code predictor compute in when engine.inference_precision leaves it to us.

Where the CPU plugin computes in bf16 by default (AMX, and AVX-512 bf16 without it), INT8 and INT4 weights compute
in f32:
- On AMX their FullyConnected kernels unpack the weights into f32 (`brgemm_avx512_f32`) more cheaply than into bf16,
  where the tiles never help them anyway (only uncompressed weights reach AMX; docs/performance.md, Which kernels
  run). `tools/bench_engine.py` on 2 AMX cores, 0.6b, frame ms at batch 1 / 8 / 16, plugin default -> f32:
  INT8 105 / 221 / 234 -> 68 / 118 / 193, INT4 78 / 171 / 202 -> 52 / 100 / 161.
- On AVX-512 bf16 without AMX (2 cores of an AMD EPYC, Zen 4) the two cost the same (one process alternating steps,
  30 pairs, fused projections, f32 / bf16: INT8 frame 0.97x at batch 1, 1.04x at 8, 1.03x at 16; INT4 0.95x,
  1.02x, 1.04x), but bf16 made a request's frames depend on who shared its step: the plugin's batched bf16 kernels
  moved a 0.6b INT8 code predictor's logits by up to 2 (on a scale of 2.8) against the same frame alone, with NaN in
  some rows from batch 8, and the runner gave 1 of 8 sequences the same codes batched as alone; in f32, 8 of 8
  (tests/native/test_batch_invariance.py).
f16 weights keep the default (on AMX their predictor takes 1.3-2.3x longer in f32). The codec decoder is float and
keeps its own precision (engine.codec_precision). Only the CPU is decided here: a GPU keeps the default.
"""
from __future__ import annotations

from dataclasses import dataclass

from wyoming_chorus.cpu import CpuFacts

COMPRESSED = ("int8", "int4")


@dataclass(frozen=True)
class LmPrecision:
    hint: str  # the INFERENCE_PRECISION_HINT to compile with ("" = the plugin's default)
    reason: str


def lm_precision(requested: str, weights: str, device: str, facts: CpuFacts | None,
                 kv_precision: str = "u8") -> LmPrecision:
    """`requested`: engine.inference_precision; `weights`: the model directory's (chorus.json); `device`: the one
    the runner compiles for; `facts`: the CPU plugin's view (None off the CPU); `kv_precision`: engine.kv_precision
    (a KV type that f32 cannot keep, bf16, leaves the default)."""
    if requested:
        return LmPrecision(requested, "set by engine.inference_precision")
    if device != "CPU" or facts is None:
        return LmPrecision("", "the device's default")
    if (weights in COMPRESSED and facts.inference_precision("") == "bf16"
            and facts.kv_error(kv_precision, "f32") is None):
        if facts.isa == "amx_bf16":
            return LmPrecision("f32", f"{weights.upper()} weights unpack faster into f32 than into bf16 on this AMX "
                                      f"CPU (1.2-1.7x a step)")
        return LmPrecision("f32", f"{weights.upper()} weights cost the same in f32 as in bf16 on this CPU, and in f32 "
                                  f"a request's frames do not depend on who shares its step")
    return LmPrecision("", "the plugin's default")



@dataclass(frozen=True)
class ActivationGroups:
    """DYNAMIC_QUANTIZATION_GROUP_SIZE of the talker and code predictor (None: the plugin's default, 32; 0: off).
    `batched`: the code predictor's body compiled a second time with this group and run for batches of `batched_from`
    entries and more (its state lives for one frame, so each frame may take either)."""

    group: int | None = None
    batched: int | None = None
    batched_from: int = 0


# INT8 weights are per output channel, so any group length along the inputs that divides the rows' length fits them;
# INT4 weights come in groups of 128 (export/compress.py), and an activation group longer than the weights' turns the
# quantisation off (measured: 1.6-2x slower a step).
INT8_ACTIVATION_GROUP = 256
INT4_BATCHED_GROUP, INT4_BATCHED_FROM = 128, 4


def activation_groups(weights: str, device: str, facts: CpuFacts | None) -> ActivationGroups:
    """On the CPU the plugin quantises the activations of products with compressed weights to int8 on the fly (VNNI
    dot products; 0 measured 1.9x slower at batch 8). Longer groups spend less on scales, and pay where the rows
    are many. Measured on 2 Zen 4 cores (AVX-512 bf16, no AMX), 0.6b, ms a step alternating both in one process
    (machine shared, ratios of medians, new / the plugin's 32):
    - INT8, 256 for both stages: code predictor body 0.78-0.90x at batch 1, 0.83-0.86x at batch 8; talker 0.86-1.0x
      at batch 1, 0.87-0.89x at batch 8; a whole engine step (EngineCore.step, steps alternated) 0.74-0.87x at
      batch 1, 0.93-0.97x at 8, 0.87x at 16. The hidden states moved no more than bf16 itself moves them.
    - INT4, 128: code predictor body 1.09-1.17x at batch 1 (kept at 32 there), 0.89x at 4, 0.84x at 8, 0.81x at 16:
      so a second body from batch 4 up (the body is small: ~40 MB of INT4 weights compiled twice); a whole engine
      step 0.83-0.84x at batch 8, 0.94x at 16 (1.06x at batch 1, where both run the same body: the noise). The talker
      measured 0.81x at batch 8 and 1.18-1.21x at batch 1, but a second paged talker would hold its ~230 MB twice
      and share the KV cache: not done.
    Elsewhere (AMX, AVX2, the GPU) nothing was measured and the plugin's default stays."""
    if device != "CPU" or facts is None or facts.isa != "avx512_bf16":
        return ActivationGroups()
    if weights == "int8":
        return ActivationGroups(INT8_ACTIVATION_GROUP)
    if weights == "int4":
        return ActivationGroups(batched=INT4_BATCHED_GROUP, batched_from=INT4_BATCHED_FROM)
    return ActivationGroups()
