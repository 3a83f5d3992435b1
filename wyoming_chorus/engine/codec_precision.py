"""The codec decoder's precision, chosen at load by measuring the weights being served.

Why measure: on a CPU with bf16 (AVX-512 BF16 / AMX) the plugin's default, bf16, decodes ~3x cheaper than f32
(0.6b codec, 2 cores: ~180-230 against ~720 ms of CPU per second of audio), but how far its audio is from f32's
depends on the weights. On random weights the difference is ~2.3% of the signal's RMS in every draw measured, so
the absolute bound issue 17 sets (1e-3 of full scale RMS) is missed by tools/bench_codec.py's weights (signal RMS
0.11: 2.5e-3) and met by the exported random models only because they are quiet (0.6b: signal RMS 0.0034, error
7.7e-5). No part of the graph carries the error alone (bench_codec's weights): with the transformer in f32, 1.4e-3 is
left; with all but the last block in f32, 2.6e-4 at f32's full cost. Whether a real checkpoint's decoder stays
within the bound cannot be told from random weights, so the server decodes a few frames of fixed codes both ways at
load and keeps the cheaper precision only when the bound holds. On a CPU that computes in f32 anyway (AVX2) there
is no cheaper float precision to compare, only the INT8 graph below.

A verdict is measured once per model files, CPU and OpenVINO release: later starts find it beside the model
(codec_verdicts.py) and compile only the decoder they serve.

An export may also leave an INT8 decoder beside the float one (export/codec_int8.py: its convolutions run as u8
kernels, ~0.66x bf16's CPU time at real dims on Zen 4 (VNNI), 0.56x f32's on an AVX2-only Zen 3 (`vpmaddubsw`), ~3.5x
bf16's audio error on random weights). Under "auto" it is measured first, the same way, on every CPU, and served when
its error is within the bound; else the choice above follows.

`engine.codec_precision`: "auto" (this), or a precision to use as it is ("" = the plugin default, f32, bf16, f16).
With "auto", an explicit `engine.inference_precision` is followed (f32 is the exact mode, codec included).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine import codec_verdicts
from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder
from wyoming_chorus.modeldir.manifest import INT8_CODEC_XML

AUDIO_ERROR_BOUND = 1e-3  # RMS of the difference from f32, as a fraction of full scale
PROBE_FRAMES = 16  # 1.3 s of audio: ~0.9 s of CPU to decode in f32 at real dims


REMEMBERED = "(measured at an earlier start on these files)"  # the verdict came from codec_verdicts.py


@dataclass(frozen=True)
class CodecChoice:
    decoder: StreamingCodecDecoder
    precision: str  # what the plugin computes in ("int8": the INT8 graph, its other ops in the default)
    reason: str     # for the start-up log


def choose_codec_decoder(xml: str | os.PathLike, codebook_size: int, requested: str = "auto",
                         inference_precision: str = "", bound: float = AUDIO_ERROR_BOUND) -> CodecChoice:
    """The decoder to serve with. `requested`: engine.codec_precision; `inference_precision`: the engine's."""
    facts = cpu_facts()
    if requested != "auto":
        return CodecChoice(StreamingCodecDecoder(xml, requested), facts.inference_precision(requested),
                           "set by engine.codec_precision")
    if inference_precision:
        return CodecChoice(StreamingCodecDecoder(xml, inference_precision),
                           facts.inference_precision(inference_precision), "as engine.inference_precision")
    cheap = facts.inference_precision("")
    int8_xml = Path(xml).with_name(INT8_CODEC_XML)
    if cheap == "f32" and not int8_xml.exists():
        return CodecChoice(StreamingCodecDecoder(xml), "f32", "the plugin's default here")
    key = codec_verdicts.verdict_key([Path(xml), int8_xml], facts, bound)
    remembered = codec_verdicts.recall(Path(xml).parent, key)
    if remembered is not None:
        precision, reason = remembered
        decoder = (StreamingCodecDecoder(int8_xml) if precision == "int8"
                   else StreamingCodecDecoder(xml, "" if precision == cheap else "f32"))
        return CodecChoice(decoder, precision, f"{reason} {REMEMBERED}")
    choice = _measured_choice(xml, codebook_size, cheap, int8_xml, bound)
    codec_verdicts.remember(Path(xml).parent, key, choice.precision, choice.reason)
    return choice


def _measured_choice(xml: str | os.PathLike, codebook_size: int, cheap: str, int8_xml: Path,
                     bound: float) -> CodecChoice:
    """INT8 if the export left it and it is within the bound, else the plugin's default if within it, else f32."""
    exact = StreamingCodecDecoder(xml, "f32")
    int8_verdict = ""
    if int8_xml.exists():
        try:
            int8 = StreamingCodecDecoder(int8_xml)
        except RuntimeError as failure:  # a damaged file, or kernels this plugin cannot build (ONEDNN_MAX_CPU_ISA)
            said = str(failure).strip().splitlines() or [type(failure).__name__]  # OpenVINO's last line names it
            int8_verdict = f"the INT8 graph does not load here ({said[-1]}); "
        else:
            error = probe_error(int8, exact, codebook_size)
            int8_verdict = f"INT8's RMS error against f32 on these weights is {error:.1e} of full scale"
            if error <= bound:
                return CodecChoice(int8, "int8", f"{int8_verdict}, within {bound:.0e}")
            int8_verdict = f"{int8_verdict}, above {bound:.0e}; "
    if cheap == "f32":
        return CodecChoice(exact, "f32", f"{int8_verdict}f32 is the plugin's default here")
    default = StreamingCodecDecoder(xml)
    error = probe_error(default, exact, codebook_size)
    verdict = f"{int8_verdict}{cheap}'s RMS error against f32 on these weights is {error:.1e} of full scale"
    if error <= bound:
        return CodecChoice(default, cheap, f"{verdict}, within {bound:.0e}")
    return CodecChoice(exact, "f32", f"{verdict}, above {bound:.0e} (engine.codec_precision: {cheap} takes the "
                                     "cheaper one anyway)")


def probe_error(decoder: StreamingCodecDecoder, reference: StreamingCodecDecoder, codebook_size: int) -> float:
    """RMS of `decoder`'s audio minus `reference`'s for the same fixed codes, as a fraction of full scale."""
    codes = np.random.default_rng(0).integers(0, codebook_size, (PROBE_FRAMES, decoder.num_quantizers))
    audio = decoder.push(decoder.new_stream(), codes).astype(np.float64)
    exact = reference.push(reference.new_stream(), codes).astype(np.float64)
    return float(np.sqrt(np.mean(np.square(audio - exact))))
