"""The INT8 codec decoder (export/codec_int8.py) on a copy of the built-in tiny model, calibrated on codes its own
talker spoke: its convolutions really run in 8 bits, and engine.codec_precision "auto" serves it when its measured
audio error against f32 is within the bound and falls back to the float choice when it is not."""
from __future__ import annotations

import shutil

import openvino as ov
import pytest

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.codec_precision import choose_codec_decoder, probe_error
from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.export.utterances import speak
from wyoming_chorus.modeldir.manifest import INT8_CODEC_XML, ModelDir

pytest.importorskip("nncf", reason="quantisation needs the optional extra: pip install '.[compress]'")

DEFAULT = cpu_facts().inference_precision("")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> ModelDir:
    directory = tmp_path_factory.mktemp("codec-int8") / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    model = ModelDir(directory)
    from wyoming_chorus.export.codec_int8 import write_int8_codec

    spoken = speak(model, False, 10, languages=("english", "german"))
    assert write_int8_codec(directory, [utterance.codes for utterance in spoken]) == directory / INT8_CODEC_XML
    return model


def convolution_precisions(decoder: StreamingCodecDecoder) -> set[str]:
    decoder.push(decoder.new_stream(), [[0] * decoder.num_quantizers])
    found = set()
    for op in decoder.runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        if "layerType" in rt and rt["layerType"].astype(str) == "Convolution":
            found.add(rt["runtimePrecision"].astype(str).lower())
    return found


def test_the_int8_graph_runs_its_convolutions_in_8_bits_and_decodes_near_f32(tiny):
    int8 = StreamingCodecDecoder(tiny / INT8_CODEC_XML)
    assert convolution_precisions(int8) <= {"u8", "i8"}, convolution_precisions(int8)
    error = probe_error(int8, StreamingCodecDecoder(tiny / "codec_decoder.xml", "f32"), tiny.manifest.codebook_size)
    assert 0.0 < error < 0.1  # quantisation noise: present, and far below the signal


def weight_types(model_xml) -> list[str]:
    """The element type of the constant each MatMul with constant weights reads (through its decompression)."""
    found = []
    for op in ov.Core().read_model(model_xml).get_ordered_ops():
        if op.get_type_name() != "MatMul":
            continue
        node = op.input_value(1).get_node()
        while node.get_type_name() in ("Convert", "Subtract", "Multiply", "Reshape"):
            node = node.input_value(0).get_node()
        if node.get_type_name() == "Constant":
            found.append(node.get_element_type().get_type_name())
    return found


def test_the_transformers_products_read_8_bit_weights(tiny):
    # A block runs the codec transformer on its 4 frames only: its products' time is their weights' bytes.
    assert weight_types(tiny / "codec_decoder.xml"), "the tiny codec has a transformer"
    assert set(weight_types(tiny / INT8_CODEC_XML)) == {"u8"}, weight_types(tiny / INT8_CODEC_XML)


def test_auto_serves_int8_within_the_bound_and_falls_back_beyond_it(tiny):
    # On every CPU, f32 ones (AVX2) included: there the INT8 graph is the only cheaper decoder.
    xml, codebook = tiny / "codec_decoder.xml", tiny.manifest.codebook_size
    served = choose_codec_decoder(xml, codebook, bound=1.0)
    assert served.precision == "int8", served.reason
    assert served.reason.startswith("INT8's RMS error against f32"), served.reason
    strict = choose_codec_decoder(xml, codebook, bound=0.0)
    assert strict.precision == "f32"
    fallback = "f32 is the plugin's default here" if DEFAULT == "f32" else f"{DEFAULT}'s RMS error"
    assert "above 0e+00; " in strict.reason and fallback in strict.reason, strict.reason


def test_an_int8_graph_that_does_not_load_leaves_the_float_choice(tiny, tmp_path):
    damaged = tmp_path / "tiny"
    shutil.copytree(tiny.path, damaged)
    (damaged / INT8_CODEC_XML).write_text("<net>not a graph")
    served = choose_codec_decoder(damaged / "codec_decoder.xml", tiny.manifest.codebook_size, bound=1.0)
    assert served.precision == DEFAULT, served.reason
    assert served.reason.startswith("the INT8 graph does not load here ("), served.reason


def test_an_explicit_precision_ignores_the_int8_graph(tiny):
    given = choose_codec_decoder(tiny / "codec_decoder.xml", tiny.manifest.codebook_size, "f32", bound=1.0)
    assert given.precision == "f32"
    assert convolution_precisions(given.decoder) == {"f32"}
