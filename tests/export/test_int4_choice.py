"""Weights "auto" (wyoming_chorus/export/int4_choice.py) on copies of the built-in tiny model: random weights, with
thresholds set so that INT4 passes or passes for one graph only. INT4 that fails everywhere (INT8 kept) is
tests/export/test_export.py's strict export, through the CLI."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from wyoming_chorus.config import EngineSettings
from wyoming_chorus.engine.codec_precision import choose_codec_decoder
from wyoming_chorus.engine.codec_verdicts import VERDICTS
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.summary import summary
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.export.int4_choice import CHECKED, CheckPlan, compress_checked
from wyoming_chorus.export.served_sampling import ServedSampling
from wyoming_chorus.export.utterances import EXACT, replay, speak
from wyoming_chorus.export.weight_check import Threshold, predictor_distance, talker_distance
from wyoming_chorus.modeldir.manifest import ModelDir

from runner_prefill import prefill, weight_types

pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")

# Three languages, a few frames each, and groups that fit the tiny dims: seconds, not minutes.
PLAN = CheckPlan(calibration_frames=6, check_frames=6, group_size=16, languages=("english", "german", "chinese"))
LENIENT, STRICT = Threshold(max_tvd=1.0, min_agreement=0.0), Threshold(max_tvd=0.0, min_agreement=1.0)


def checked_copy(tmp_path, threshold: Threshold):
    directory = tmp_path / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    lines: list[str] = []
    check = compress_checked(directory, threshold, PLAN, report=lines.append)
    return directory, check, lines


def test_the_float_model_replayed_is_at_distance_zero():
    """Teacher forcing lines each replayed logit up with the decision it stands for: the float graphs, replayed as
    one prefill (talker) or step by step (code predictor), land where they spoke."""
    model = ModelDir(resolve_model("builtin:tiny"))
    spoken = speak(model, True, 6, languages=("english", "german"))
    talker, predictor = replay(model / "talker.xml", model / "code_predictor.xml", EXACT, spoken)
    manifest = model.manifest
    sampling = ServedSampling.from_manifest(manifest.generation, manifest.codebook_size, manifest.eos_id)
    for distance in (talker_distance(sampling, spoken, talker), predictor_distance(sampling, spoken, predictor)):
        assert distance.agreement == 1.0 and distance.tvd < 1e-3, distance
    assert sum(len(u.codes) for u in spoken) == talker_distance(sampling, spoken, talker).decisions == 12


@pytest.fixture(scope="module")
def lenient(tmp_path_factory):
    return checked_copy(tmp_path_factory.mktemp("lenient"), LENIENT)


def test_int4_within_the_threshold_is_kept_and_recorded(lenient):
    directory, check, lines = lenient
    manifest = ModelDir(directory).manifest
    assert manifest.weights == "int4" and manifest.weights_check == check
    for graph in CHECKED:
        figures = check["graphs"][graph]
        assert figures["weights"] == "int4"
        assert "i4" in weight_types(directory / f"{graph}.xml"), graph
        for mode in ("int4", "int8"):
            assert 0.0 <= figures[mode]["tvd"] <= 1.0 and 0.0 <= figures[mode]["agreement"] <= 1.0
        assert figures["int4"]["tvd"] > 0.0  # the weights did change
    decisions = {graph: check["graphs"][graph]["int4"]["decisions"] for graph in CHECKED}
    assert decisions["code_predictor"] == 15 * decisions["talker"] > 0
    assert "i4" not in weight_types(directory / "text.xml")  # the embedding table: INT8 always
    assert "i8" in weight_types(directory / "codec_decoder_int8.xml")  # the codec's INT8 twin, for start-up to judge
    assert [line.split(": ")[1] for line in lines] == ["talker", "code predictor"]
    assert all(line.startswith("checking INT4 on this checkpoint: ") and "-> INT4 (threshold" in line
               and "TVD" in line for line in lines)
    # No staging file left behind (the codec's precision verdict, engine/codec_verdicts.py, may come with the copy).
    assert [path.name for path in directory.glob(".*")] in ([], [VERDICTS])


def test_the_runner_serves_the_checked_dir(lenient):
    codes = prefill(lenient[0], RunnerOptions(device="CPU", num_blocks=4)).codes
    assert codes.shape == (1, 16) and codes.min() >= 0 and codes[0, 1:].max() < 2048


def test_each_graph_is_judged_on_its_own(tmp_path, lenient):
    """A TVD bound between the two graphs' INT4 figures keeps INT4 for the closer graph only."""
    tvd = {graph: lenient[1]["graphs"][graph]["int4"]["tvd"] for graph in CHECKED}
    closer, farther = sorted(CHECKED, key=tvd.__getitem__)
    if tvd[closer] == tvd[farther]:
        pytest.skip("both graphs measured the same TVD")
    _, check, _ = checked_copy(tmp_path, Threshold(max_tvd=float(np.mean(list(tvd.values()))), min_agreement=0.0))
    assert check["graphs"][closer]["weights"] == "int4" and check["graphs"][farther]["weights"] == "int8"
    assert json.loads((tmp_path / "tiny" / "chorus.json").read_text())["weights"] == "int4"
    # "int4 weights" alone would hide that one graph runs INT8: the start-up log names each graph's format.
    model = ModelDir(tmp_path / "tiny")
    runner = PagedRunner(model, RunnerOptions(device="CPU", num_blocks=4))
    codec = choose_codec_decoder(model / "codec_decoder.xml", model.manifest.codebook_size, "f32")
    first = summary(model, runner, codec, EngineSettings())[0]
    mixed = ", ".join(f"{graph.replace('_', ' ')} {check['graphs'][graph]['weights']}" for graph in CHECKED)
    assert f"({model.manifest.model_type}, {mixed} weights)" in first, first
    assert "int4" in mixed and "int8" in mixed


def test_one_format_for_every_graph_is_named_once(lenient):
    assert ModelDir(lenient[0]).manifest.weights_label == "int4"
