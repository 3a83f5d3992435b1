"""The code predictor's body on the runner's own code (native/predictor_body.*), where every product in it is on our
kernel: it speaks the codes the plugin's body speaks with the same products. Both run the same kernel calls on the
same packed weights; only the small parts (norms, RoPE, attention, SiLU) are computed apart, so a code may differ
only where two logits are within float rounding of each other. Tiny's predictor is narrower than its talker (32 and
64 wide), so its projection and bias run too; CHORUS_PREDICTOR_BODY=plugin keeps the plugin's body."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.native_module import _native

from native_steps import Entry, Model, rows, run_step

pytestmark = pytest.mark.skipif(not _native.native_matmul_available(),
                                reason="this CPU has neither AVX2 nor AVX-512 VNNI")


@pytest.fixture(scope="module", params=["int8", "int4"])
def compressed(request, tmp_path_factory) -> Model:
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    from wyoming_chorus.export.compress import compress_model_dir

    directory = tmp_path_factory.mktemp(request.param) / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    compress_model_dir(directory, request.param, group_size=32)
    tables = load_file(str(directory / "embeddings.safetensors"))
    return Model(directory, json.loads((directory / "chorus.json").read_text()), tables["codec_embedding"],
                 tables["cp_codec_embedding"])


def predictor_kernels(runner) -> set[str]:
    return {primitive for graph, _, primitive, _ in runner.kernels() if graph == "code_predictor"}


def frames(runner, model: Model, seed: int) -> np.ndarray:
    """Eight rooms' first frames, greedy: [8, 16] codes."""
    rng = np.random.default_rng(seed)
    entries = [Entry(rows(rng, 12, model.hidden), 0, [2 * i, 2 * i + 1]) for i in range(8)]
    return np.asarray(run_step(runner, entries, model.hidden)[0])


def test_the_body_runs_natively_unless_told_otherwise(compressed, monkeypatch):
    assert "chorus_predictor_body_avx2" in predictor_kernels(compressed.runner(native=True))
    monkeypatch.setenv("CHORUS_PREDICTOR_BODY", "plugin")
    assert "chorus_predictor_body_avx2" not in predictor_kernels(compressed.runner(native=True))
    monkeypatch.delenv("CHORUS_PREDICTOR_BODY")
    # Without the kernel the products are the plugin's, and so is the body.
    assert "chorus_predictor_body_avx2" not in predictor_kernels(compressed.runner(native=False))


def test_the_native_body_speaks_the_plugin_bodys_codes(compressed, monkeypatch):
    native = np.concatenate([frames(compressed.runner(native=True), compressed, seed) for seed in range(3)])
    monkeypatch.setenv("CHORUS_PREDICTOR_BODY", "plugin")
    plugin = np.concatenate([frames(compressed.runner(native=True), compressed, seed) for seed in range(3)])
    assert (native[:, 0] == plugin[:, 0]).all()  # the talker's code: the same graph both times
    # 24 rooms x 15 codes; the talker's code 0 feeds the predictor, so every code depends on the body.
    agreement = (native[:, 1:] == plugin[:, 1:]).mean()
    assert agreement >= 0.97, (agreement, native[:, 1:], plugin[:, 1:])
