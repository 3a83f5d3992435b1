"""A model directory is read in one place, and one that this version cannot read is refused in one line."""
from __future__ import annotations

import json
import shutil

import pytest

from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.modeldir.manifest import GENERATION_DEFAULTS, ModelDir


def copy_of_tiny(tmp_path):
    directory = tmp_path / "model"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    return directory


def test_the_manifest_is_typed_and_fills_the_sampling_defaults(tmp_path):
    directory = copy_of_tiny(tmp_path)
    manifest = json.loads((directory / "chorus.json").read_text())
    del manifest["generation"]["min_new_tokens"]
    (directory / "chorus.json").write_text(json.dumps(manifest))
    model = ModelDir(directory)
    assert model.manifest.name == "tiny" and model.manifest.random_weights
    assert model.manifest.min_new_tokens == GENERATION_DEFAULTS["min_new_tokens"]
    assert model.manifest.codebook_size == 2048 and model.manifest.samples_per_frame == 1920
    assert model.embeddings is model.embeddings  # loaded once, shared


@pytest.mark.parametrize("format_", [None, 0, 2, "1"])
def test_a_directory_of_another_format_is_refused_with_the_fix(tmp_path, format_):
    directory = copy_of_tiny(tmp_path)
    manifest = json.loads((directory / "chorus.json").read_text())
    if format_ is None:
        del manifest["format"]
    else:
        manifest["format"] = format_
    (directory / "chorus.json").write_text(json.dumps(manifest))
    with pytest.raises(SetupError, match="wyoming-chorus export"):
        ModelDir(directory)


def test_a_foreign_or_broken_directory_is_refused(tmp_path):
    with pytest.raises(SetupError, match="not a model directory"):
        ModelDir(tmp_path)
    (tmp_path / "chorus.json").write_text("{not json")
    with pytest.raises(SetupError, match="cannot be read"):
        ModelDir(tmp_path)
    (tmp_path / "chorus.json").write_text(json.dumps({"format": 1, "name": "x"}))
    with pytest.raises(SetupError, match="incomplete"):
        ModelDir(tmp_path)
