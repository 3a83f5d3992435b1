"""engine.codec_precision "auto" measures once per model files (engine/codec_verdicts.py): a later start serves the
verdict it finds beside the model, and new files, another bound or an unreadable verdict are measured again."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.codec_precision import REMEMBERED, choose_codec_decoder
from wyoming_chorus.engine.codec_verdicts import VERDICTS
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.modeldir.manifest import ModelDir

F32_CPU = cpu_facts().inference_precision("") == "f32"


@pytest.fixture
def model(tmp_path):
    directory = tmp_path / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory, ignore=shutil.ignore_patterns(VERDICTS))
    if F32_CPU:
        # A CPU that computes in f32 (AVX2) chooses only between f32 and an INT8 graph: give it one, calibrated on
        # random codes (what is remembered is under test here, not the quantisation).
        pytest.importorskip("nncf", reason="the INT8 graph needs the optional extra: pip install '.[compress]'")
        from wyoming_chorus.export.codec_int8 import write_int8_codec

        codebook = ModelDir(directory).manifest.codebook_size
        write_int8_codec(directory, [np.random.default_rng(0).integers(0, codebook, (8, 16))])
    return directory


def choose(model, bound=1.0):
    return choose_codec_decoder(model / "codec_decoder.xml", ModelDir(model).manifest.codebook_size, bound=bound)


def test_a_later_start_serves_the_measured_precision_without_measuring(model):
    first = choose(model)
    assert REMEMBERED not in first.reason and (model / VERDICTS).exists()
    again = choose(model)
    assert again.precision == first.precision and again.reason == f"{first.reason} {REMEMBERED}"
    # The remembered decoder is the one measured: same audio for the same codes.
    codes = [[1] * first.decoder.num_quantizers] * 4
    assert (first.decoder.push(first.decoder.new_stream(), codes) ==
            again.decoder.push(again.decoder.new_stream(), codes)).all()


def test_a_strict_bound_remembers_f32(model):
    assert choose(model, bound=0.0).precision == "f32"
    again = choose(model, bound=0.0)
    assert again.precision == "f32" and again.reason.endswith(REMEMBERED)
    assert choose(model, bound=1.0).reason.count(REMEMBERED) == 0  # another bound: measured


def test_new_files_or_an_unreadable_verdict_are_measured_again(model):
    choose(model)
    weights = model / "codec_decoder.bin"
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # as a new export leaves it
    assert REMEMBERED not in choose(model).reason
    (model / VERDICTS).write_text("{not json")
    assert REMEMBERED not in choose(model).reason
    assert choose(model).reason.endswith(REMEMBERED)  # and written whole again
