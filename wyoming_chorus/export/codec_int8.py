"""An INT8 codec decoder beside the float one: its convolutions' weights (per output channel) and input activations
(per tensor) quantised by NNCF, calibrated on codes the user's own model spoke, so that the CPU plugin runs them as
u8 x i8 VNNI kernels; everything else (SnakeBeta, the norms, the transformer's activations) stays in the served float
precision.

Why only the convolutions (tools/codec_int8.py, 0.6b codec at real dims on random weights, 2 Zen 4 cores, CPU time
paired against bf16): they are ~80% of the bf16 decode; quantised alone they cut it to 0.66x with 3.5x bf16's audio
error, while NNCF's whole-graph default (the Multiplies and Adds of SnakeBeta too) was 0.88x with 20x bf16's error.
Whether the audio stays within engine.codec_precision's bound depends on the weights, so the server measures it at
start-up (engine/codec_precision.py) and serves this graph only where it passes.

The codec transformer's matrix products keep float activations but read INT8 weights (per output channel,
asymmetric): a decoder block runs the transformer on its 4 frames only, so its 60 products read their 28M weights
for 4 rows, and their time is the weights' bytes (bf16: 56 MB a block, ~2.5 ms of a 35 ms block on 2 Zen 4 cores).
INT8 weights: 0.97x the twin's time, its audio error 2.8e-4 of full scale against 2.6e-4 (0.6b, random weights);
INT4 (groups of 64) 0.95x but 9.9e-4, at the bound itself.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import openvino as ov

from wyoming_chorus.modeldir.manifest import CODEC_BLOCK_FRAMES as BLOCK_FRAMES
from wyoming_chorus.modeldir.manifest import INT8_CODEC_XML

# Frames spoken per calibration sentence (~2 s of audio each), as the INT4 check's calibration (int4_choice.py).
CALIBRATION_FRAMES = 24
# Every op type NNCF may quantise besides the convolutions: kept in float.
_KEPT_IN_FLOAT = ["MatMul", "Add", "Multiply", "Subtract", "Divide", "Maximum", "Minimum", "MVN", "Gelu", "Round",
                  "Clamp", "Concat", "ScaledDotProductAttention", "Power", "Sqrt", "ReduceMean", "Swish", "Sigmoid"]
# What nncf.compress_weights would otherwise touch besides the transformer's MatMuls.
_NOT_WEIGHT_COMPRESSED = ["Convolution", "GroupConvolution", "Gather"]


def write_int8_codec(model_dir: Path, utterances: Iterable[np.ndarray]) -> Path:
    """Quantise model_dir/codec_decoder.xml on `utterances` (codes [frames, 16] each, decoded as served: blocks of
    4 frames on one stream per utterance) and save it as model_dir/codec_decoder_int8.xml; returns that path."""
    from wyoming_chorus.export.compress import import_nncf

    nncf = import_nncf()
    model_dir = Path(model_dir)
    model = ov.Core().read_model(model_dir / "codec_decoder.xml")
    blocks = [block for codes in utterances for block in _blocks(np.asarray(codes, np.int64))]
    if not blocks:
        raise ValueError("no codes to calibrate the INT8 codec decoder on")
    quantized = nncf.quantize(model, nncf.Dataset(blocks), subset_size=len(blocks),
                              ignored_scope=nncf.IgnoredScope(types=_KEPT_IN_FLOAT, validate=False))
    # Weights only, and only the transformer's products: the convolutions are quantised above, the codebooks'
    # lookups read a few rows a block.
    quantized = nncf.compress_weights(quantized, mode=nncf.CompressWeightsMode.INT8_ASYM,
                                      ignored_scope=nncf.IgnoredScope(types=_NOT_WEIGHT_COMPRESSED, validate=False))
    target = model_dir / INT8_CODEC_XML
    staging = target.with_name(f".{target.stem}.quantizing.xml")
    try:
        ov.save_model(quantized, str(staging), compress_to_fp16=False)
        os.replace(staging.with_suffix(".bin"), target.with_suffix(".bin"))
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
        staging.with_suffix(".bin").unlink(missing_ok=True)
    return target


def write_spoken_int8_codec(model_dir: Path, frames: int = CALIBRATION_FRAMES) -> Path:
    """write_int8_codec on the codes model_dir's own language models speak for the household calibration sentences
    (`frames` each): for an export that runs no INT4 check (whose float model's codes int4_choice.py reuses)."""
    from wyoming_chorus.export.utterances import speak
    from wyoming_chorus.modeldir.manifest import ModelDir

    return write_int8_codec(model_dir, [spoken.codes for spoken in speak(ModelDir(model_dir), False, frames)])


def _blocks(codes: np.ndarray) -> list[dict[str, np.ndarray]]:
    """The decoder inputs of one utterance: [1, 16, BLOCK_FRAMES] blocks, the last padded with code -1 as served."""
    blocks = []
    for start in range(0, len(codes), BLOCK_FRAMES):
        block = np.full((codes.shape[1], BLOCK_FRAMES), -1, np.int64)
        chunk = codes[start: start + BLOCK_FRAMES]
        block[:, : len(chunk)] = chunk.T
        blocks.append({"codes": block[None]})
    return blocks
