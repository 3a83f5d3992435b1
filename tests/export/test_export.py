"""`wyoming-chorus export` on checkpoints in the hub layout, made here without torch: sharded float32 and bfloat16
weights, the slow-tokenizer files, and incomplete checkpoints (one line naming what is missing, exit code 2).
tests/native/test_fidelity.py checks exported models against the reference implementation itself."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tokenizers import Tokenizer

from wyoming_chorus.cli import main
from wyoming_chorus.export.convert import ExportError, export_checkpoint
from wyoming_chorus.export.tokenizer import train_tokenizer

from checkpoints import SPECIAL, write_checkpoint
from runner_prefill import weight_types


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hub") / "checkpoint"
    write_checkpoint(path)
    return path


def test_export_of_a_sharded_checkpoint(checkpoint, tmp_path):
    out = export_checkpoint(checkpoint, tmp_path / "model", weights="f32", name="tiny-voice", log=None)
    manifest = json.loads((out / "chorus.json").read_text())
    assert manifest["name"] == "tiny-voice" and manifest["model_type"] == "custom_voice"
    assert manifest["speakers"] == {"ryan": 3000, "serena": 3001, "eric": 3002}
    generation = manifest["generation"]
    assert (generation["temperature"], generation["top_k"], generation["top_p"]) == (0.7, 30, 0.95)
    assert generation["repetition_penalty"] == 1.1
    assert generation["subtalker_temperature"] == 0.0  # subtalker_dosample false: greedy
    for name in ("talker", "code_predictor", "text", "codec_decoder"):
        assert (out / f"{name}.xml").is_file() and (out / f"{name}.bin").is_file()


def test_tokenizer_from_the_slow_files_matches_the_original(checkpoint, tmp_path):
    """vocab.json + merges.txt + tokenizer_config.json become a tokenizer.json that encodes like the one they were
    written from (the special tokens included)."""
    out = export_checkpoint(checkpoint, tmp_path / "model", weights="f32", log=None)
    original = Tokenizer.from_str(train_tokenizer(384, SPECIAL))
    exported = Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in ["Turn on the kitchen lights.", "  spaces\n\nnewlines\r\n", "Straße 今天 🙂 3.14 don't",
                 "<|im_start|>assistant\nHi<|im_end|>\n<|tts_pad|>"]:
        ours, theirs = (t.encode(text, add_special_tokens=False).ids for t in (exported, original))
        assert ours == theirs


def test_bf16_checkpoint_is_widened_exactly(tmp_path):
    weights, _ = write_checkpoint(tmp_path / "checkpoint", bf16=True)
    out = export_checkpoint(tmp_path / "checkpoint", tmp_path / "model", weights="f32", log=None)
    tables = load_file(str(out / "embeddings.safetensors"))
    np.testing.assert_array_equal(tables["codec_embedding"], weights["talker.model.codec_embedding.weight"])
    np.testing.assert_array_equal(tables["cp_codec_embedding"][3],
                                  weights["talker.code_predictor.model.codec_embedding.3.weight"])


def _broken(checkpoint: Path, tmp_path: Path, damage) -> Path:
    broken = tmp_path / "broken"
    shutil.copytree(checkpoint, broken)
    damage(broken)
    return broken


def _drop_tensor(directory: Path, name: str, reshape: bool = False) -> None:
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    shard = directory / index["weight_map"][name]
    tensors = load_file(str(shard))
    value = tensors.pop(name)
    if reshape:
        tensors[name] = value[:-1]
    save_file(tensors, str(shard))


BROKEN = {
    "generation_config.json": lambda d: (d / "generation_config.json").unlink(),
    "merges.txt": lambda d: (d / "merges.txt").unlink(),
    "speech_tokenizer/config.json": lambda d: (d / "speech_tokenizer" / "config.json").unlink(),
    "model-00002-of-00002.safetensors": lambda d: (d / "model-00002-of-00002.safetensors").unlink(),
    "talker.codec_head.weight": lambda d: _drop_tensor(d, "talker.codec_head.weight"),
    "has shape": lambda d: _drop_tensor(d, "talker.model.norm.weight", reshape=True),
    "decoder.pre_conv.conv.weight": lambda d: save_file(
        {k: v for k, v in load_file(str(d / "speech_tokenizer" / "model.safetensors")).items()
         if k != "decoder.pre_conv.conv.weight"}, str(d / "speech_tokenizer" / "model.safetensors")),
    # A Base checkpoint is exported with its speaker encoder, so one without it is incomplete.
    "a base model needs a speaker_encoder_config": lambda d: (d / "config.json").write_text(
        json.dumps({**json.loads((d / "config.json").read_text()), "tts_model_type": "base"})),
}


@pytest.mark.parametrize("expected", BROKEN)
def test_incomplete_checkpoint_fails_with_one_line(checkpoint, tmp_path, capsys, expected):
    broken = _broken(checkpoint, tmp_path, BROKEN[expected])
    assert main(["export", str(broken), "-o", str(tmp_path / "model")]) == 2
    *progress, error = capsys.readouterr().err.strip().splitlines()
    assert error.startswith("wyoming-chorus export: ") and expected in error, error
    assert all(line.startswith("export: ") for line in progress), progress  # before it: only the stages that ran


def test_compressed_weights_need_nncf_or_run(checkpoint, tmp_path):
    try:
        import nncf  # noqa: F401
    except ImportError:
        with pytest.raises(ExportError, match="NNCF"):
            export_checkpoint(checkpoint, tmp_path / "model", weights="int8", log=None)
        return
    out = export_checkpoint(checkpoint, tmp_path / "model", weights="int8", log=None)
    assert json.loads((out / "chorus.json").read_text())["weights"] == "int8"


LENIENT = ["--int4-max-tvd", "1", "--int4-min-agreement", "0"]
STRICT = ["--int4-max-tvd", "0", "--int4-min-agreement", "1"]


@pytest.mark.parametrize(("flags", "expected"), [(LENIENT, "int4"), (STRICT, "int8")])
def test_the_default_export_checks_int4_on_the_checkpoint(checkpoint, tmp_path, capfd, flags, expected):
    """No --weights: auto, which keeps INT4 where the threshold allows (here: everywhere, or nowhere) and says so."""
    pytest.importorskip("nncf")
    out = tmp_path / "model"
    assert main(["export", str(checkpoint), "-o", str(out), *flags]) == 0
    manifest = json.loads((out / "chorus.json").read_text())
    assert manifest["weights"] == expected
    assert manifest["weights_check"]["threshold"] == {"max_tvd": float(flags[1]), "min_agreement": float(flags[3])}
    assert {graph: figures["weights"] for graph, figures in manifest["weights_check"]["graphs"].items()} == \
        {"talker": expected, "code_predictor": expected}
    err = capfd.readouterr().err
    assert "export: compressing weights: INT4 where this checkpoint's check allows, INT8 elsewhere (the check " in err
    verdicts = [line for line in err.splitlines() if line.startswith("export: checking INT4 on this checkpoint: ")]
    assert [line.split(": ")[2] for line in verdicts] == ["talker", "code predictor"], err
    verdict = {"int4": "-> INT4 (threshold", "int8": "-> INT8, INT4 missed the threshold"}[expected]
    assert all(verdict in line for line in verdicts), verdicts
    for graph in ("talker", "code_predictor"):  # the graph files hold what the manifest says
        types = weight_types(out / f"{graph}.xml")
        assert ("i4" in types) == (expected == "int4") and (expected == "int4" or "u8" in types), (graph, types)


def test_weights_int8_asked_for_skip_the_check(checkpoint, tmp_path):
    pytest.importorskip("nncf")
    out = tmp_path / "model"
    assert main(["export", str(checkpoint), "-o", str(out), "--weights", "int8"]) == 0
    manifest = json.loads((out / "chorus.json").read_text())
    assert manifest["weights"] == "int8" and "weights_check" not in manifest


@pytest.mark.parametrize("flag", ["--int4-max-tvd", "--int4-min-agreement"])
def test_a_threshold_outside_0_to_1_is_refused_in_one_line(checkpoint, tmp_path, capsys, flag):
    assert main(["export", str(checkpoint), "-o", str(tmp_path / "model"), "--weights", "auto", flag, "1.5"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "between 0 and 1" in error, error
