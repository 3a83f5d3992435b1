"""engine.codec_precision "auto" (engine/codec_precision.py) on the tiny model's real codec decoder: the cheaper
default precision is kept only when its measured audio error against f32 is within the bound, an explicit setting is
used as given, and engine.inference_precision is followed."""
from __future__ import annotations

import pytest

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.codec_precision import choose_codec_decoder, probe_error
from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder

TINY = model_dir(EngineSettings())
XML = TINY / "codec_decoder.xml"
CODEBOOK = TINY.manifest.codebook_size
DEFAULT = cpu_facts().inference_precision("")


def test_a_loose_bound_keeps_the_devices_default_and_a_zero_bound_falls_back_to_f32():
    assert choose_codec_decoder(XML, CODEBOOK, bound=1.0).precision == DEFAULT
    strict = choose_codec_decoder(XML, CODEBOOK, bound=0.0)
    assert strict.precision == "f32"
    # On a CPU that computes in bf16 the probe ran and said why; where f32 is the default there was nothing to compare.
    assert ("above 0e+00" in strict.reason) == (DEFAULT != "f32"), strict.reason


def test_an_explicit_setting_is_used_as_given_and_inference_precision_is_followed():
    given = choose_codec_decoder(XML, CODEBOOK, "f32", bound=1.0)
    assert (given.precision, given.reason) == ("f32", "set by engine.codec_precision")
    followed = choose_codec_decoder(XML, CODEBOOK, "auto", inference_precision="f32", bound=1.0)
    assert (followed.precision, followed.reason) == ("f32", "as engine.inference_precision")


def test_the_probe_measures_the_difference_of_the_two_decoders_audio():
    exact = StreamingCodecDecoder(XML, "f32")
    assert probe_error(exact, StreamingCodecDecoder(XML, "f32"), CODEBOOK) == 0.0
    if DEFAULT == "f32":
        pytest.skip("this CPU computes in f32 by default: no cheaper precision to measure")
    error = probe_error(StreamingCodecDecoder(XML, ""), exact, CODEBOOK)
    assert 0.0 < error < 0.1  # bf16 rounding: present, and far below the signal (random weights: RMS ~0.1)
