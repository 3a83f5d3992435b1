"""Weight compression of a model directory (wyoming_chorus/export/compress.py) on a copy of the built-in tiny model."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import openvino as ov
import pytest

from wyoming_chorus.engine.codec_verdicts import VERDICTS
from wyoming_chorus.engine.runner import RunnerOptions
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.export.compress import compress_model_dir
from wyoming_chorus.modeldir.manifest import INT8_CODEC_XML

from runner_prefill import prefill

pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")

# INT8 per-channel weights (and the plugin's on-the-fly INT8 activations) against f32: the tiny model's logits move by
# under 1% of their largest magnitude; the bound leaves room. (At 0.6B dims: ~3.5%, tools/compress_fidelity.py.)
TOLERANCE = 0.02
EXACT = RunnerOptions(device="CPU", kv_precision="f32", inference_precision="f32", num_blocks=4)
# In .ci/avx2 (under the emulated Haswell, or natively on an AVX2-only host) the codec twin's calibration (the household
# sentences spoken by the tiny model) took ~12 of that job's 22 minutes emulated; there
# tests/export/test_codec_int8.py checks the twin on AVX2 kernels instead.
AVX2_JOB = os.environ.get("CHORUS_EXPECT_ISA") == "avx2"


@pytest.fixture(scope="module")
def original():
    return resolve_model("builtin:tiny")


@pytest.fixture(scope="module")
def compressed(tmp_path_factory, original):
    directory = tmp_path_factory.mktemp("int8") / "tiny"
    shutil.copytree(original, directory)
    sizes = compress_model_dir(directory, "int8", codec_twin=not AVX2_JOB)
    return directory, sizes


def test_int8_keeps_talker_logits_close(original, compressed):
    directory, _ = compressed
    reference = prefill(original, EXACT).logits
    logits = prefill(directory, EXACT).logits
    assert np.abs(logits - reference).max() <= TOLERANCE * np.abs(reference).max()
    assert not np.array_equal(logits, reference)  # the weights did change


def test_manifest_records_the_mode_and_every_graph_shrinks(original, compressed):
    directory, sizes = compressed
    assert json.loads((directory / "chorus.json").read_text())["weights"] == "int8"
    assert json.loads((original / "chorus.json").read_text())["weights"] == "f32"  # the original is untouched
    for graph in ("talker", "code_predictor", "text"):
        before, after = sizes[graph]
        assert after < before * 0.6, graph
        assert after == (directory / f"{graph}.xml").stat().st_size + (directory / f"{graph}.bin").stat().st_size
    assert sizes["total"][1] < sizes["total"][0]
    # The codec decoder's INT8 twin, calibrated on what this model speaks; the float decoder stays beside it.
    if AVX2_JOB:
        assert not (directory / INT8_CODEC_XML).exists()
    else:
        twin = ov.Core().read_model(directory / INT8_CODEC_XML)
        assert any(op.get_type_name() == "FakeQuantize" for op in twin.get_ops())
    assert (directory / "codec_decoder.xml").read_bytes() == (original / "codec_decoder.xml").read_bytes()
    # No staging file left behind (the codec's precision verdict, engine/codec_verdicts.py, may come with the copy).
    assert [path.name for path in directory.glob(".*")] in ([], [VERDICTS])


def test_the_runner_serves_the_compressed_dir_with_plugin_defaults(compressed):
    directory, _ = compressed
    codes = prefill(directory, RunnerOptions(device="CPU", num_blocks=4)).codes
    assert codes.shape == (1, 16) and codes.min() >= 0 and codes[0, 1:].max() < 2048


def test_compressing_twice_or_an_unknown_mode_is_refused(original, compressed):
    directory, _ = compressed
    with pytest.raises(ValueError, match="already has int8 weights"):
        compress_model_dir(directory, "int8")
    with pytest.raises(ValueError, match="mode must be one of"):
        compress_model_dir(original, "int3")


def test_int4_compresses_with_a_group_that_fits_the_tiny_dims(tmp_path, original):
    directory = tmp_path / "tiny"
    shutil.copytree(original, directory)
    sizes = compress_model_dir(directory, "int4", group_size=16, codec_twin=False)  # the twin: the int8 fixture
    assert sizes["talker"][1] < sizes["talker"][0] * 0.6
    assert json.loads((directory / "chorus.json").read_text())["weights"] == "int4"
    assert not (directory / INT8_CODEC_XML).exists()  # asked without the codec's twin
    assert prefill(directory, RunnerOptions(device="CPU", num_blocks=4)).codes.shape == (1, 16)
