"""The OpenVINO graphs of the talker, code predictor and text projection against an independent numpy reference,
plus the model directory, the built-in cache and the prompt layout. Tiny preset, real OpenVINO, CPU."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino._offline_transformations import paged_attention_transformation
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from wyoming_chorus.errors import SetupError
from wyoming_chorus.export import builtin
from wyoming_chorus.export.build import write_model_dir
from wyoming_chorus.export.codec_random import CODEC_PRESETS, random_codec_decoder_weights
from wyoming_chorus.export.presets import (
    TEXT_SPECIAL_TOKENS,
    random_talker_weights,
    talker_config,
    tokenizer_vocab_size,
)
from wyoming_chorus.export.tokenizer import special_token_ids, train_tokenizer
from wyoming_chorus.frontend.prompt import PromptBuilder
from wyoming_chorus.graphs.code_predictor import build_code_predictor
from wyoming_chorus.graphs.talker import build_talker
from wyoming_chorus.graphs.text_embedding import build_text
from wyoming_chorus.modeldir.manifest import ModelDir

from reference_numpy import CodePredictor, Talker, text_embeds

EXACT = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tokenizer_json():
    return train_tokenizer(384, list(TEXT_SPECIAL_TOKENS.values()))


@pytest.fixture(scope="module")
def config(tokenizer_json):
    ids = special_token_ids(tokenizer_json, list(TEXT_SPECIAL_TOKENS.values()))
    return talker_config("tiny", {key: ids[token] for key, token in TEXT_SPECIAL_TOKENS.items()})


@pytest.fixture(scope="module")
def weights(config):
    # Larger than the preset's 0.02 and with non-unit norms, so that attention is far from uniform and a swapped
    # or ignored norm weight shows.
    rng = np.random.default_rng(1234)
    weights = random_talker_weights(config, rng, std=0.1)
    for name, value in weights.items():
        if "norm" in name:
            weights[name] = (1.0 + 0.2 * rng.standard_normal(value.shape)).astype(np.float32)
    return weights


@pytest.fixture(scope="module")
def core():
    return ov.Core()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, weights, config, tokenizer_json):
    decoder_config = CODEC_PRESETS["tiny"]
    codec = random_codec_decoder_weights(decoder_config, np.random.default_rng(5))
    return write_model_dir(tmp_path_factory.mktemp("model") / "tiny", weights, config, codec,
                           {"decoder_config": decoder_config}, tokenizer_json)


def _runtime_types(compiled) -> Counter:
    return Counter(node.get_rt_info()["layerType"].astype(str) for node in compiled.get_runtime_model().get_ops())


def test_talker_matches_numpy_over_prefill_and_decode(core, weights, config):
    request = core.compile_model(build_talker(weights, config), "CPU", EXACT).create_infer_request()
    references = [Talker(weights, config) for _ in range(2)]
    rng = np.random.default_rng(0)
    hidden = config["talker_config"]["hidden_size"]
    # Entry 1 is two rows shorter in the prefill: left padding, masked out by attention_mask.
    lengths, padded = [7, 5], 7
    embeds = rng.standard_normal((2, padded, hidden)).astype(np.float32)
    mask = np.array([[1] * 7, [0, 0] + [1] * 5], np.int64)
    positions = np.array([range(7), [0, 0, *range(5)]], np.int64)
    request.infer({"inputs_embeds": embeds, "attention_mask": mask, "position_ids": positions,
                   "beam_idx": np.arange(2, dtype=np.int32)})
    for b, length in enumerate(lengths):
        logits, hid = references[b].forward(embeds[b, padded - length:])
        np.testing.assert_allclose(request.get_tensor("logits").data[b, padded - length:], logits, atol=TOLERANCE)
        np.testing.assert_allclose(request.get_tensor("hidden").data[b, padded - length:], hid, atol=TOLERANCE)
    for step in range(3):
        embeds = rng.standard_normal((2, 1, hidden)).astype(np.float32)
        mask = np.concatenate([mask, np.ones((2, 1), np.int64)], 1)
        positions = np.array([[lengths[0] + step], [lengths[1] + step]], np.int64)
        request.infer({"inputs_embeds": embeds, "attention_mask": mask, "position_ids": positions,
                       "beam_idx": np.arange(2, dtype=np.int32)})
        for b in range(2):
            logits, hid = references[b].forward(embeds[b])
            np.testing.assert_allclose(request.get_tensor("logits").data[b], logits, atol=TOLERANCE)
            np.testing.assert_allclose(request.get_tensor("hidden").data[b], hid, atol=TOLERANCE)


def test_code_predictor_matches_numpy_for_a_frame_and_resets(core, weights, config):
    request = core.compile_model(build_code_predictor(weights, config), "CPU", EXACT).create_infer_request()
    rng = np.random.default_rng(1)
    hidden = config["talker_config"]["hidden_size"]
    for _ in range(2):  # the second frame proves reset_state() starts positions and history afresh
        request.reset_state()
        references = [CodePredictor(weights, config) for _ in range(3)]
        for head, rows in enumerate([2, 1, 1, 1, 1]):
            embeds = rng.standard_normal((3, rows, hidden)).astype(np.float32)
            request.infer({"inputs_embeds": embeds, "head_index": np.array(head * 3, np.int64)})
            for b in range(3):
                np.testing.assert_allclose(request.get_tensor("logits").data[b],
                                           references[b].forward(embeds[b], head * 3), atol=TOLERANCE)


def test_code_predictor_projects_when_widths_differ(config):
    # The tiny code predictor (32) is narrower than the talker (64), so the projection must be in the graph.
    model = build_code_predictor(random_talker_weights(config, np.random.default_rng(0)), config)
    assert model.input("inputs_embeds").get_partial_shape()[2] == config["talker_config"]["hidden_size"]
    assert model.output("logits").get_partial_shape()[1] == 2048


def test_text_graph_matches_numpy(core, weights, config):
    compiled = core.compile_model(build_text(weights, config), "CPU", EXACT)
    ids = np.array([0, 5, 200, 383, 5], np.int64)
    np.testing.assert_allclose(compiled({"input_ids": ids})["embeds"], text_embeds(weights, ids), atol=TOLERANCE)


def test_cpu_plugin_fuses_rope_rms_and_stateful_attention(core, weights, config):
    # The fused MLP (LLMMLP) is not counted: the CPU plugin only attempts it on AMX CPUs with bf16/f16 inference.
    for build, key in ((build_talker, "talker_config"), (build_code_predictor, "code_predictor_config")):
        section = config["talker_config"] if key == "talker_config" else config["talker_config"][key]
        layers = section["num_hidden_layers"]
        types = _runtime_types(core.compile_model(build(weights, config), "CPU"))
        assert types["RoPE"] == 2 * layers
        assert types["RMS"] == 4 * layers + 1  # input, post-attention, q and k norms per layer + the final norm
        assert types["ScaledDotProductAttention"] == layers
        assert types["Softmax"] == 0


def test_each_layer_runs_four_weight_products(core, weights, config):
    # q/k/v as one product and gate/up as one (graphs/ops.py fused_linear), then o and down: each FullyConnected
    # call has fixed costs, so fewer of them make a faster step. The one more per graph: the talker's codec head,
    # the tiny predictor's small_to_mtp_projection (its width differs from the talker's).
    for build, key in ((build_talker, "talker_config"), (build_code_predictor, "code_predictor_config")):
        section = config["talker_config"] if key == "talker_config" else config["talker_config"][key]
        types = _runtime_types(core.compile_model(build(weights, config), "CPU"))
        assert types["FullyConnected"] == 4 * section["num_hidden_layers"] + 1


def test_talker_converts_to_paged_attention_and_agrees(core, weights, config):
    stateful = build_talker(weights, config)
    paged = stateful.clone()
    paged_attention_transformation(paged, use_block_indices_inputs=False, use_score_outputs=False,
                                   allow_score_aggregation=False, allow_cache_rotation=False,
                                   allow_xattention=False, allow_adaptive_rkv=False, allow_qq_bias=False)
    names = [port.get_any_name() for port in paged.inputs]
    layers = config["talker_config"]["num_hidden_layers"]
    assert names[:7] == ["inputs_embeds", "position_ids", "max_context_len", "past_lens", "subsequence_begins",
                         "block_indices_begins", "block_indices"]
    assert sorted(names[7:]) == sorted(f"{kind}_cache.{i}" for i in range(layers) for kind in ("key", "value"))
    assert [port.get_any_name() for port in paged.outputs] == ["logits", "hidden"]

    # Same numbers as the stateful form: a 37-row prefill across a block boundary (CPU blocks hold 32) into
    # physical blocks [2, 0], then one decode row.
    compiled = core.compile_model(paged, "CPU", EXACT)
    request = compiled.create_infer_request()
    for name in names[7:]:
        port = compiled.input(name)
        request.set_tensor(name, ov.Tensor(port.get_element_type(),
                                           [4] + [d.get_length() for d in port.get_partial_shape()[1:]]))
    reference = core.compile_model(stateful, "CPU", EXACT).create_infer_request()
    rows = np.random.default_rng(2).standard_normal((38, config["talker_config"]["hidden_size"])).astype(np.float32)
    for past, new in ((0, 37), (37, 1)):
        request.infer({"inputs_embeds": rows[past:past + new], "position_ids": np.arange(past, past + new),
                       "past_lens": np.array([past], np.int32), "subsequence_begins": np.array([0, new], np.int32),
                       "block_indices": np.array([2, 0], np.int32), "block_indices_begins": np.array([0, 2], np.int32),
                       "max_context_len": np.array(past + new, np.int32)})
        reference.infer({"inputs_embeds": rows[None, past:past + new],
                         "attention_mask": np.ones((1, past + new), np.int64),
                         "position_ids": np.arange(past, past + new)[None], "beam_idx": np.zeros(1, np.int32)})
        np.testing.assert_allclose(request.get_tensor("logits").data[:, 0], reference.get_tensor("logits").data[0],
                                   atol=TOLERANCE)


def test_incomplete_weights_name_the_missing_tensor(weights, config):
    partial = {name: value for name, value in weights.items() if name != "talker.model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(ValueError, match=r"talker\.model\.layers\.1\.mlp\.up_proj\.weight"):
        build_talker(partial, config)
    wrong = dict(weights, **{"talker.codec_head.weight": np.zeros((10, 64), np.float32)})
    with pytest.raises(ValueError, match="talker.codec_head.weight"):
        build_talker(wrong, config)
    no_cp = {**config, "talker_config": {k: v for k, v in config["talker_config"].items()
                                         if k != "code_predictor_config"}}
    with pytest.raises(ValueError, match="code_predictor_config"):
        build_code_predictor(weights, no_cp)


def test_model_dir_has_the_contract_files(model_dir, weights, config):
    manifest = json.loads((model_dir / "chorus.json").read_text())
    assert manifest["hidden_size"] == 64 and manifest["samples_per_frame"] == 1920
    assert manifest["codec_ids"]["eos"] == 2150 and manifest["speakers"]["serena"] == 3001
    assert manifest["text_ids"]["tts_pad"] == config["tts_pad_token_id"]
    tables = load_file(str(model_dir / "embeddings.safetensors"))
    np.testing.assert_array_equal(tables["codec_embedding"], weights["talker.model.codec_embedding.weight"])
    assert tables["cp_codec_embedding"].shape == (15, 2048, 64)
    np.testing.assert_array_equal(tables["cp_codec_embedding"][7],
                                  weights["talker.code_predictor.model.codec_embedding.7.weight"])
    for graph in ("talker", "code_predictor", "text", "codec_decoder"):
        assert (model_dir / f"{graph}.xml").is_file() and (model_dir / f"{graph}.bin").is_file()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    assert len(tokenizer.encode("assistant").ids) == 1 and len(tokenizer.encode("\n").ids) == 1
    assert tokenizer.token_to_id("<|im_start|>") == manifest["text_ids"]["im_start"]


def test_f16_weights_are_stored_in_f16(tmp_path, weights, config, tokenizer_json):
    codec_config = CODEC_PRESETS["tiny"]
    codec = random_codec_decoder_weights(codec_config, np.random.default_rng(0))
    out = write_model_dir(tmp_path / "half", weights, config, codec, {"decoder_config": codec_config},
                          tokenizer_json, weight_dtype="f16")
    types = {node.get_element_type().get_type_name() for node in ov.Core().read_model(out / "talker.xml").get_ops()
             if node.get_type_name() == "Constant" and node.get_output_shape(0) == [3072, 64]}
    assert types == {"f16"}


def test_builtin_tiny_is_built_once_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = builtin.resolve_model("builtin:tiny")
    stamp = (first / "chorus.json").stat().st_mtime_ns
    assert builtin.resolve_model("builtin:tiny") == first
    assert (first / "chorus.json").stat().st_mtime_ns == stamp
    assert first.name == f"tiny-{builtin.builder_version()}"
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary build left behind
    assert builtin.resolve_model(str(first)) == first
    with pytest.raises(SetupError, match="builtin:nope"):
        builtin.resolve_model("builtin:nope")
    with pytest.raises(SetupError, match="chorus.json"):
        builtin.resolve_model(str(tmp_path))


def _tokens(model_dir, text):
    return Tokenizer.from_file(str(model_dir / "tokenizer.json")).encode(text, add_special_tokens=False).ids


def test_prompt_layout_non_streaming(model_dir, weights):
    builder = PromptBuilder(ModelDir(model_dir))
    manifest = builder.manifest
    codec = weights["talker.model.codec_embedding.weight"]
    ids_of, text_ids = manifest.codec_ids, manifest.text_ids
    prompt = builder.build("Turn on the lights.", speaker="Serena", language="English")

    ids = _tokens(model_dir, "<|im_start|>assistant\nTurn on the lights.<|im_end|>\n<|im_start|>assistant\n")
    pad, bos, eos = (text_embeds(weights, [text_ids[k]])[0] for k in ("tts_pad", "tts_bos", "tts_eos"))
    tags = [ids_of["think"], ids_of["think_bos"], manifest.languages["english"], ids_of["think_eos"],
            manifest.speakers["serena"], ids_of["pad"]]
    expected = np.concatenate([
        text_embeds(weights, ids[:3]),
        np.stack([pad] * (len(tags) - 1) + [bos]) + codec[tags],
        np.concatenate([text_embeds(weights, ids[3:-5]), eos[None]]) + codec[ids_of["pad"]],
        (pad + codec[ids_of["bos"]])[None],
    ])
    assert prompt.n_text_tokens == len(ids) - 8
    assert prompt.trailing.shape == (0, 64)
    np.testing.assert_allclose(prompt.pad, pad, atol=TOLERANCE)
    np.testing.assert_allclose(prompt.prefill, expected, atol=TOLERANCE)


def test_prompt_layout_streaming_text_with_instruction(model_dir, weights):
    builder = PromptBuilder(ModelDir(model_dir), non_streaming_mode=False)
    manifest = builder.manifest
    codec = weights["talker.model.codec_embedding.weight"]
    ids_of, text_ids = manifest.codec_ids, manifest.text_ids
    # No language: "auto" -> nothink tags; no speaker -> no speaker row.
    prompt = builder.build("Good night.", instruct="whisper")

    instruct = _tokens(model_dir, "<|im_start|>user\nwhisper<|im_end|>\n")
    ids = _tokens(model_dir, "<|im_start|>assistant\nGood night.<|im_end|>\n<|im_start|>assistant\n")
    pad, bos, eos = (text_embeds(weights, [text_ids[k]])[0] for k in ("tts_pad", "tts_bos", "tts_eos"))
    tags = [ids_of["nothink"], ids_of["think_bos"], ids_of["think_eos"], ids_of["pad"]]
    expected = np.concatenate([
        text_embeds(weights, instruct),
        text_embeds(weights, ids[:3]),
        np.stack([pad] * (len(tags) - 1) + [bos]) + codec[tags],
        text_embeds(weights, ids[3:4]) + codec[ids_of["bos"]],
    ])
    np.testing.assert_allclose(prompt.prefill, expected, atol=TOLERANCE)
    np.testing.assert_allclose(prompt.trailing, np.concatenate([text_embeds(weights, ids[4:-5]), eos[None]]),
                               atol=TOLERANCE)


def test_prompt_dialect_speaker_and_errors(model_dir, weights):
    builder = PromptBuilder(ModelDir(model_dir))
    codec = weights["talker.model.codec_embedding.weight"]
    languages = builder.manifest.languages
    # A dialect speaker with language auto speaks the dialect: its id is the third tag row's codec part.
    prompt = builder.build("Hello.", speaker="eric")
    plain = builder.build("Hello.", speaker="eric", language="english")
    np.testing.assert_allclose(prompt.prefill[5] - plain.prefill[5],
                               codec[languages["sichuan_dialect"]] - codec[languages["english"]], atol=TOLERANCE)
    with pytest.raises(ValueError, match="speaker"):
        builder.build("Hello.", speaker="nobody")
    with pytest.raises(ValueError, match="language"):
        builder.build("Hello.", language="klingon")


def test_the_tiny_presets_weights_are_keyed_and_shaped_like_a_reference_checkpoint():
    """tests/data/qwen3-tts-tiny-checkpoint-keys.tsv lists every tensor of a tiny checkpoint made with the reference's
    own classes (one code-predictor layer; the preset has two): each must be in the preset, with its shape."""
    rows = [line.rstrip("\n").split("\t") for line in
            (Path(__file__).parents[1] / "data" / "qwen3-tts-tiny-checkpoint-keys.tsv").read_text().splitlines()
            if not line.startswith("#")]
    expected = {name: json.loads(shape) for file, name, shape, _ in rows if file == "ckpt/model.safetensors"}
    tokenizer_json = train_tokenizer(tokenizer_vocab_size("tiny"), list(TEXT_SPECIAL_TOKENS.values()))
    ids = special_token_ids(tokenizer_json, list(TEXT_SPECIAL_TOKENS.values()))
    config = talker_config("tiny", {key: ids[token] for key, token in TEXT_SPECIAL_TOKENS.items()})
    weights = random_talker_weights(config, np.random.default_rng(0))
    assert len(expected) > 50
    assert {name: list(weights[name].shape) for name in expected if name in weights} == expected
