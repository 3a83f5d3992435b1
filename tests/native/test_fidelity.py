"""Fidelity to the reference implementation, qwen-tts 0.1.1 on torch 2.13.0 (the `fidelity` extra; see .ci/run).

Tiny random checkpoints of a CustomVoice (bfloat16, as released) and a VoiceDesign (float32) model are made with
the reference's own classes and saved in the hub layout, then exported by `wyoming-chorus export`. Checked, all at
f32:
  (a) the talker, code predictor, text embedding and codec decoder graphs against the reference modules (1e-4);
  (b) greedy generation through the engine (paged f32 KV) gives exactly the reference's codes, and the talker's
      prompt rows match the reference's;
  (c) the engine's PCM matches the reference's decode of the same codes (1e-3);
  (d) the same through the CLI: `wyoming-chorus synth --greedy --kv-precision f32 --save-codes`;
  (e) U8 KV against f32 KV, printed: codebook-0 KL divergence and code agreement with the same (teacher-forced)
      history, and how many free-running frames stay identical; the KL mean must stay at or below 1e-3.
  (f) Base (voice cloning from a speaker embedding, x_vector_only_mode): the speaker encoder graph, the log-mel and
      a clip's embedding against the reference (1e-4), the cloned prompt, and greedy codes identical to
      generate_voice_clone with the x-vector-only voice_clone_prompt.
  (g) Base, in-context cloning (a clip and its transcript, the reference's default mode): the clip's codes from the
      codec encoder graph identical to the reference speech tokenizer's, the ICL prompt rows (1e-5), greedy codes
      identical to generate_voice_clone's, and the PCM (the reference decodes clip codes ++ generated codes and
      cuts the clip's part) within 1e-3.

Exact codes need greedy decisions that float32 noise cannot flip. Random models produce near-ties (gaps of 1e-5
between the best and second-best logit at the reference's initialisation), so the seeds and weight scales below
were chosen for margins of at least 2e-4 over every decision these tests make (the talker's logits differ from the
reference's by ~3e-6, 70x less); the tests assert a margin of 1e-4, so a change that makes a near-tie fails as
such, not as a mismatch.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the reference implementation needs torch: pip install '.[fidelity]' "
                                    "and qwen-tts --no-deps (see .ci/run)")
if importlib.util.find_spec("qwen_tts") is None:  # imported below, after qwen_reference stubs its audio deps
    pytest.skip("the reference implementation: pip install --no-deps qwen-tts==0.1.1", allow_module_level=True)

import openvino as ov  # noqa: E402
import torch  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from wyoming_chorus.config import CloneVoice, DesignVoice, EngineSettings, VoicesSettings  # noqa: E402
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions  # noqa: E402
from wyoming_chorus.engine.scheduler import ScheduledEntry  # noqa: E402
from wyoming_chorus.engine.sequence import SamplingParams, Sequence  # noqa: E402
from wyoming_chorus.export.convert import export_checkpoint  # noqa: E402
from wyoming_chorus.frontend.clone import ClipCodes, SpeakerEmbeddings, read_wav  # noqa: E402
from wyoming_chorus.frontend.language import choose_language  # noqa: E402
from wyoming_chorus.frontend.mel import log_mel  # noqa: E402
from wyoming_chorus.frontend.normalize import normalize  # noqa: E402
from wyoming_chorus.frontend.prompt import PromptBuilder  # noqa: E402
from wyoming_chorus.frontend.voices import Voices  # noqa: E402
from wyoming_chorus.modeldir.manifest import ModelDir  # noqa: E402
from wyoming_chorus.speech.api import Request  # noqa: E402
from wyoming_chorus.speech.speech import Speech  # noqa: E402

import qwen_reference as reference  # noqa: E402

# The CPU plugin keeps a stateful graph's KV cache in u8 unless told otherwise.
F32 = {"INFERENCE_PRECISION_HINT": "f32", "KV_CACHE_PRECISION": "f32"}
FRAMES = 24
MIN_MARGIN = 1e-4
TOLERANCE = 1e-4
PCM_TOLERANCE = 1e-3
INSTRUCT = "A calm, low voice."


@dataclass
class Model:
    checkpoint: Path
    dir: Path
    reference: reference.Qwen3TTSModel


def _model(tmp_path_factory, model_type: str, seed: int, weight_scale: float, bf16: bool) -> Model:
    root = tmp_path_factory.mktemp(model_type)
    checkpoint = reference.make_checkpoint(root / "checkpoint", model_type, seed, weight_scale, bf16)
    model_dir = export_checkpoint(checkpoint, root / model_type, weights="f32", log=None)
    return Model(checkpoint, model_dir, reference.load(checkpoint))


@pytest.fixture(scope="module")
def custom_voice(tmp_path_factory) -> Model:
    # Stored in bfloat16, as the released checkpoints are: the exporter widens exactly what the reference loads.
    return _model(tmp_path_factory, "custom_voice", seed=1, weight_scale=4.0, bf16=True)


@pytest.fixture(scope="module")
def voice_design(tmp_path_factory) -> Model:
    return _model(tmp_path_factory, "voice_design", seed=1, weight_scale=3.0, bf16=False)


@dataclass(frozen=True)
class Case:
    """One request: the same text, voice and language on both sides."""
    model: str
    text: str
    voice: str
    speaker: str | None = None
    language: str | None = None     # a client's code ("en"); None lets the model decide
    instruct: str | None = None


CASES = {
    "ryan": Case("custom_voice", "Turn off the kitchen lights.", "ryan", speaker="ryan"),
    "serena-english": Case("custom_voice", "The front door is locked.", "serena", speaker="serena", language="en"),
    # Chinese text, told as such: a dialect speaker speaks his dialect there (the dialect's id in the prompt).
    "eric-dialect": Case("custom_voice", "晚安。", "eric", speaker="eric"),
    "designed": Case("voice_design", "Welcome home!", "calm", instruct=INSTRUCT),
}
_LANGUAGE_NAMES = {None: "auto", "en": "english", "zh": "chinese"}


def spoken_language(case: Case, models) -> str | None:
    """The language the engine speaks the case in: the request's, else the one it tells from the text among the
    voice's languages (Home Assistant sends none), else None (the model decides)."""
    voices = Voices(ModelDir(models[case.model].dir), VoicesSettings(design=(DesignVoice("calm", INSTRUCT),)))
    code, _ = choose_language(case.language, None, case.text, voices.find(case.voice, None).languages)
    return code


@pytest.fixture(scope="module")
def models(request) -> dict[str, Model]:
    return {"custom_voice": request.getfixturevalue("custom_voice"),
            "voice_design": request.getfixturevalue("voice_design")}


@pytest.fixture(scope="module")
def reference_runs(models):
    """Each case's reference greedy generation, made once."""
    runs: dict[str, reference.Generation] = {}

    def run(name: str) -> reference.Generation:
        if name not in runs:
            case = CASES[name]
            language = spoken_language(case, models)
            runs[name] = reference.generate(models[case.model].reference, normalize(case.text, language),
                                            FRAMES, speaker=case.speaker, language=_LANGUAGE_NAMES[language],
                                            instruct=case.instruct)
        return runs[name]
    return run


@pytest.fixture(scope="module")
def engines(models):
    started = {}
    for name, model in models.items():
        # The reference's generate_custom_voice / generate_voice_design layout (the whole text up front), which
        # reference_runs make; the server's default layout is checked on its own below.
        settings = EngineSettings(model=str(model.dir), device="CPU", greedy=True, kv_precision="f32",
                                  inference_precision="f32", max_frames=FRAMES, prompt_layout="reference")
        voices = VoicesSettings(design=(DesignVoice("calm", INSTRUCT),) if name == "voice_design" else ())
        started[name] = Speech(ModelDir(model.dir), settings, voices=voices)
        started[name].start()
    yield started
    for engine in started.values():
        engine.stop()


def synthesize(engine: Speech, case: Case) -> tuple[np.ndarray, np.ndarray]:
    """(codes [frames, 16], PCM as f32) of one request."""
    async def collect():
        handle = engine.open(Request(case.text, voice=case.voice, language=case.language, keep_codes=True))
        pcm = b"".join([chunk async for chunk in handle])
        return np.stack(handle.codes), np.frombuffer(pcm, np.int16).astype(np.float32) / 32768
    return asyncio.run(collect())


# ---- the exported files ------------------------------------------------------------------------------------------

TEXTS = ["Turn on the kitchen lights.", "  two  spaces\nand a newline\n\n", "don't I'll we're HelloWorld",
         "Guten Morgen, Straße!", "今天天气很好。", "emoji 🙂 and 3.14", "<|im_start|>assistant\nHi<|im_end|>\n",
         "<|tts_pad|><|tts_text_bos|>x<|tts_text_eod|>"]


def test_tokenizer_matches_the_reference_processor(custom_voice):
    """The exporter builds tokenizer.json from vocab.json + merges.txt + tokenizer_config.json as transformers
    does for the reference: the same ids for plain text, special tokens, whitespace runs and any bytes."""
    ours = Tokenizer.from_file(str(custom_voice.dir / "tokenizer.json"))
    processor = custom_voice.reference.processor
    for text in TEXTS:
        assert ours.encode(text, add_special_tokens=False).ids == processor(text=text)["input_ids"][0], text


def test_manifest_carries_the_checkpoint_settings(custom_voice):
    manifest = json.loads((custom_voice.dir / "chorus.json").read_text())
    config = json.loads((custom_voice.checkpoint / "config.json").read_text())
    assert manifest["model_type"] == "custom_voice"
    assert manifest["speakers"] == config["talker_config"]["spk_id"]
    assert manifest["generation"]["repetition_penalty"] == reference.GENERATION_CONFIG["repetition_penalty"]
    assert manifest["text_ids"]["tts_pad"] == config["tts_pad_token_id"]


# ---- (a) the graphs against the reference modules ----------------------------------------------------------------

@pytest.mark.parametrize("which", ["custom_voice", "voice_design"])
def test_talker_matches_reference(models, which):
    model = models[which]
    talker = model.reference.model.talker
    hidden = talker.config.hidden_size
    request = ov.Core().compile_model(model.dir / "talker.xml", "CPU", F32).create_infer_request()
    rows = torch.randn(1, 11, hidden, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected_hidden = talker.model(inputs_embeds=rows, use_cache=False).last_hidden_state
        expected_logits = talker.codec_head(expected_hidden)
    past = 0
    for chunk in (7, 1, 3):  # a prefill, then steps on top of the cached keys and values
        request.infer({"inputs_embeds": rows[:, past:past + chunk].numpy(),
                       "attention_mask": np.ones((1, past + chunk), np.int64),
                       "position_ids": np.arange(past, past + chunk, dtype=np.int64)[None],
                       "beam_idx": np.zeros(1, np.int32)})
        np.testing.assert_allclose(request.get_tensor("hidden").data[0],
                                   expected_hidden[0, past:past + chunk].numpy(), atol=TOLERANCE, rtol=0)
        np.testing.assert_allclose(request.get_tensor("logits").data[0],
                                   expected_logits[0, past:past + chunk].numpy(), atol=TOLERANCE, rtol=0)
        past += chunk


@pytest.mark.parametrize("which", ["custom_voice", "voice_design"])
def test_code_predictor_matches_reference(models, which):
    """One frame: the 2-row prefill (talker hidden, codebook-0 embedding), then one row per codebook."""
    model = models[which]
    predictor = model.reference.model.talker.code_predictor
    hidden = model.reference.model.talker.config.hidden_size
    request = ov.Core().compile_model(model.dir / "code_predictor.xml", "CPU", F32).create_infer_request()
    rows = torch.randn(1, 16, hidden, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        states = predictor.model(inputs_embeds=predictor.small_to_mtp_projection(rows),
                                 use_cache=False).last_hidden_state
    request.reset_state()
    for j in range(15):
        new = rows[:, :2] if j == 0 else rows[:, j + 1:j + 2]
        request.infer({"inputs_embeds": new.numpy(), "head_index": np.array(j, np.int64)})
        with torch.no_grad():
            expected = predictor.lm_head[j](states[:, j + 1])
        np.testing.assert_allclose(request.get_tensor("logits").data, expected.numpy(), atol=TOLERANCE, rtol=0)


def test_text_embedding_matches_reference(custom_voice):
    talker = custom_voice.reference.model.talker
    ids = np.arange(talker.config.text_vocab_size, dtype=np.int64)
    compiled = ov.Core().compile_model(custom_voice.dir / "text.xml", "CPU", F32)
    with torch.no_grad():
        expected = talker.text_projection(talker.get_text_embeddings()(torch.from_numpy(ids)))
    np.testing.assert_allclose(compiled({"input_ids": ids})["embeds"], expected.numpy(), atol=TOLERANCE, rtol=0)


def test_codec_decoder_matches_reference(custom_voice):
    decoder = custom_voice.reference.model.speech_tokenizer.model.decoder
    codes = np.random.default_rng(2).integers(0, 2048, (1, 16, 30))
    compiled = ov.Core().compile_model(custom_voice.dir / "codec_decoder.xml", "CPU", F32)
    with torch.no_grad():
        expected = decoder(torch.from_numpy(codes)).numpy()
    audio = compiled.create_infer_request().infer({"codes": codes})["audio"]
    assert np.sqrt(np.mean(expected ** 2)) > 0.01  # audible: a silent decoder would hide every mismatch
    np.testing.assert_allclose(audio, expected, atol=TOLERANCE, rtol=0)


# ---- (b) prompts and greedy codes --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CASES)
def test_prompt_matches_reference(models, reference_runs, name):
    case = CASES[name]
    run = reference_runs(name)
    language = spoken_language(case, models)
    prompt = PromptBuilder(ModelDir(models[case.model].dir)).build(
        normalize(case.text, language), speaker=case.speaker, language=_LANGUAGE_NAMES[language],
        instruct=case.instruct)
    assert prompt.prefill.shape == run.prefill.shape
    np.testing.assert_allclose(prompt.prefill, run.prefill, atol=1e-5, rtol=0)
    # Non-streaming text input: the whole text is in the prompt, and every frame's text track is tts_pad.
    assert len(prompt.trailing) == 0
    np.testing.assert_allclose(run.trailing, prompt.pad[None], atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", CASES)
def test_greedy_codes_match_reference(engines, reference_runs, name):
    case = CASES[name]
    run = reference_runs(name)
    assert min(run.margins) >= MIN_MARGIN, "a near-tie: choose another seed (see the module doc)"
    codes, _ = synthesize(engines[case.model], case)
    assert codes.shape == run.codes.shape
    np.testing.assert_array_equal(codes, run.codes)


# ---- (b2) streaming text input: the text fed while the codes are made ---------------------------------------------

STREAMED = {
    "serena": Case("custom_voice", "The front door is locked and the garage is closed.", "serena",
                   speaker="serena", language="en"),
    "designed": Case("voice_design", "Welcome home, the heating is on.", "calm", language="en", instruct=INSTRUCT),
}


def synthesize_streamed(engine: Speech, case: Case, word_delay: float) -> np.ndarray:
    """Codes [frames, 16] of a request whose text comes word by word, `word_delay` seconds apart (each piece after
    the first starting with its space, as the server cuts them)."""
    async def feed(handle):
        words = case.text.split(" ")
        handle.feed(words[0])
        for word in words[1:]:
            await asyncio.sleep(word_delay)
            handle.feed(" " + word)
        handle.close()

    async def collect():
        handle = engine.open(Request(None, voice=case.voice, language=case.language, keep_codes=True))
        feeding = asyncio.create_task(feed(handle))
        async for _ in handle:
            pass
        await feeding
        return np.stack(handle.codes)
    return asyncio.run(collect())


@pytest.mark.parametrize("name", STREAMED)
@pytest.mark.parametrize("word_delay", [0.0, 0.05])  # ahead of the frames; behind them (the request waits for text)
def test_streamed_text_codes_match_the_reference_streaming_layout(engines, models, name, word_delay):
    """The reference's generate with non_streaming_mode=False takes one text token per frame, the layout a streamed
    text is fed into: with every token there before its frame needs it, the codes are the same; a request that has
    to wait for its text makes the same codes too, later."""
    case = STREAMED[name]
    run = reference.generate(models[case.model].reference, normalize(case.text, case.language), FRAMES,
                             speaker=case.speaker, language=_LANGUAGE_NAMES[case.language], instruct=case.instruct,
                             non_streaming_mode=False)
    assert min(run.margins) >= MIN_MARGIN, "a near-tie: choose another text (see the module doc)"
    codes = synthesize_streamed(engines[case.model], case, word_delay)
    assert codes.shape == run.codes.shape
    np.testing.assert_array_equal(codes, run.codes)


def test_a_whole_text_under_the_streaming_prompt_layout_makes_the_reference_streaming_codes(models):
    """engine.prompt_layout: streaming (the default) speaks a complete text (one synthesize) in the reference's
    non_streaming_mode=False layout: the same codes as its generate, and not the whole-text layout's."""
    case = STREAMED["serena"]
    model = models[case.model]
    text = normalize(case.text, case.language)
    run = reference.generate(model.reference, text, FRAMES, speaker=case.speaker,
                             language=_LANGUAGE_NAMES[case.language], non_streaming_mode=False)
    assert min(run.margins) >= MIN_MARGIN, "a near-tie: choose another text (see the module doc)"
    settings = EngineSettings(model=str(model.dir), device="CPU", greedy=True, kv_precision="f32",
                              inference_precision="f32", max_frames=FRAMES, prompt_layout="streaming")
    engine = Speech(ModelDir(model.dir), settings)
    engine.start()
    try:
        codes, _ = synthesize(engine, case)
    finally:
        engine.stop()
    np.testing.assert_array_equal(codes, run.codes)
    whole = reference.generate(model.reference, text, FRAMES, speaker=case.speaker,
                               language=_LANGUAGE_NAMES[case.language])
    assert not np.array_equal(whole.codes, run.codes)  # the two layouts differ, so the check above can fail


# ---- (c) audio ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ryan", "designed"])
def test_pcm_matches_reference(engines, reference_runs, name):
    case = CASES[name]
    run = reference_runs(name)
    codes, pcm = synthesize(engines[case.model], case)
    np.testing.assert_array_equal(codes, run.codes)
    assert pcm.shape == run.pcm.shape == (len(codes) * 1920,)
    assert np.sqrt(np.mean(run.pcm ** 2)) > 0.01
    # The engine's PCM is int16: its rounding (3e-5) is well inside the tolerance.
    np.testing.assert_allclose(pcm, run.pcm, atol=PCM_TOLERANCE, rtol=0)


# ---- (d) the command line ----------------------------------------------------------------------------------------

def test_cli_synth_matches_reference(custom_voice, reference_runs, tmp_path):
    case = CASES["ryan"]
    config = tmp_path / "config.yaml"
    config.write_text(f"engine:\n  max_frames: {FRAMES}\n  prompt_layout: reference\n")
    command = [sys.executable, "-m", "wyoming_chorus", "synth", case.text, "-o", str(tmp_path / "out.wav"),
               "--model", str(custom_voice.dir), "--voice", case.voice, "--greedy", "--kv-precision", "f32",
               "--save-codes", str(tmp_path / "codes.npy"), "--config", str(config), "--device", "CPU"]
    # Run outside the source tree, which `-m` would otherwise put first on the path (it lacks the built runner).
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "codes.npy"), reference_runs("ryan").codes)


# ---- (f) Base: voice cloning from a speaker embedding ------------------------------------------------------------

CLONE_TEXT = "Turn on the kitchen lights."


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Model:
    # bfloat16 like the released checkpoints (the speaker encoder too); seed 3 gives greedy margins >= 6e-4 here.
    return _model(tmp_path_factory, "base", seed=3, weight_scale=4.0, bf16=True)


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    """One second of a tone in noise, 16-bit 24 kHz mono, as a reference clip."""
    rng = np.random.default_rng(0)
    t = np.arange(24000) / 24000
    samples = np.round((0.3 * np.sin(2 * np.pi * 180 * t) + 0.02 * rng.standard_normal(len(t))) * 32767)
    path = tmp_path_factory.mktemp("clip") / "anna.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24000)
        out.writeframes(samples.astype("<i2").tobytes())
    return path


def clone_language(base) -> str:
    """The model's name of the language the engine tells from CLONE_TEXT (a clone speaks every model language)."""
    languages = Voices(ModelDir(base.dir), VoicesSettings()).current()[0].languages
    return _LANGUAGE_NAMES[choose_language(None, None, CLONE_TEXT, languages)[0]]


@pytest.fixture(scope="module")
def clone_run(base, clip):
    """The reference's embedding of the clip (read as soundfile reads it: int16 / 32768) and its greedy run."""
    audio, _ = read_wav(clip)
    embedding = reference.speaker_embedding(base.reference, audio)
    run = reference.generate(base.reference, CLONE_TEXT, FRAMES, clone_prompt=reference.x_vector_prompt(embedding),
                             language=clone_language(base))
    return embedding, run


def test_base_manifest(base):
    manifest = json.loads((base.dir / "chorus.json").read_text())
    assert manifest["model_type"] == "base" and manifest["speakers"] == {}
    assert manifest["speaker_encoder"] == {"sample_rate": 24000, "embedding_size": manifest["hidden_size"]}


def test_speaker_encoder_matches_reference(base):
    encoder = base.reference.model.speaker_encoder
    mel = torch.randn(1, 83, 128, generator=torch.Generator().manual_seed(3))
    compiled = ov.Core().compile_model(base.dir / "speaker_encoder.xml", "CPU", F32)
    with torch.no_grad():
        expected = encoder(mel)[0].numpy()
    assert np.abs(expected).max() > 0.01
    np.testing.assert_allclose(compiled({"mel": mel.numpy()})["embedding"], expected, atol=TOLERANCE, rtol=0)


def test_log_mel_matches_reference(base, clip):
    from qwen_tts.core.models.modeling_qwen3_tts import mel_spectrogram

    audio, _ = read_wav(clip)
    reference.speaker_embedding(base.reference, audio)  # installs the reference's filter bank where librosa is absent
    with torch.no_grad():
        expected = mel_spectrogram(torch.from_numpy(audio)[None], n_fft=1024, num_mels=128, sampling_rate=24000,
                                   hop_size=256, win_size=1024, fmin=0, fmax=12000).transpose(1, 2)[0].numpy()
    ours = log_mel(audio)
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, atol=TOLERANCE, rtol=0)


def test_clip_embedding_matches_reference(base, clip, clone_run):
    embedding, _ = clone_run
    ours = SpeakerEmbeddings(ModelDir(base.dir)).of_clip(clip)
    print(f"\nclip speaker embedding: max abs diff {np.abs(ours - embedding).max():.2e} "
          f"(values up to {np.abs(embedding).max():.2f})")
    np.testing.assert_allclose(ours, embedding, atol=TOLERANCE, rtol=0)


def test_clone_prompt_matches_reference(base, clip, clone_run):
    _, run = clone_run
    embedding = SpeakerEmbeddings(ModelDir(base.dir)).of_clip(clip)
    prompt = PromptBuilder(ModelDir(base.dir)).build(CLONE_TEXT, speaker_embedding=embedding,
                                                     non_streaming_mode=False, language=clone_language(base))
    assert prompt.prefill.shape == run.prefill.shape
    np.testing.assert_allclose(prompt.prefill, run.prefill, atol=1e-5, rtol=0)
    np.testing.assert_allclose(prompt.trailing, run.trailing[:len(prompt.trailing)], atol=1e-5, rtol=0)


def test_clone_greedy_codes_match_reference(base, clip, clone_run):
    _, run = clone_run
    assert min(run.margins) >= MIN_MARGIN, "a near-tie: choose another seed (see the module doc)"
    settings = EngineSettings(model=str(base.dir), device="CPU", greedy=True, kv_precision="f32",
                              inference_precision="f32", max_frames=FRAMES)
    # No transcript: the clip's speaker embedding only.
    engine = Speech(ModelDir(base.dir), settings, voices=VoicesSettings(clone=(CloneVoice("anna", clip),)))
    engine.start()
    try:
        codes, pcm = synthesize(engine, Case("base", CLONE_TEXT, "anna"))
    finally:
        engine.stop()
    assert codes.shape == run.codes.shape
    np.testing.assert_array_equal(codes, run.codes)
    np.testing.assert_allclose(pcm, run.pcm, atol=PCM_TOLERANCE, rtol=0)


# ---- (g) Base: in-context cloning (the clip's codes and transcript) ----------------------------------------------

CLIP_TEXT = "A low hum in noise."  # greedy margins >= 1e-4 with the base fixture ("A low tone in noise." had 6e-5)


@pytest.fixture(scope="module")
def icl_run(base, clip):
    """The reference's in-context voice_clone_prompt of the clip (its codes, embedding, transcript) and its greedy
    generate_voice_clone run (non_streaming_mode=False, the default)."""
    audio, _ = read_wav(clip)
    items = reference.icl_prompt(base.reference, audio, CLIP_TEXT)
    run = reference.generate(base.reference, CLONE_TEXT, FRAMES, clone_prompt=items, language=clone_language(base))
    return items[0], run


def test_base_exports_the_codec_encoder(base):
    manifest = json.loads((base.dir / "chorus.json").read_text())
    assert manifest["codec_encoder"] == {"sample_rate": 24000, "samples_per_frame": 1920}
    assert (base.dir / "codec_encoder.xml").is_file()


@pytest.mark.parametrize("samples", [24000, 24000 + 1919, 5 * 1920])
def test_codec_encoder_matches_reference(base, samples):
    tokenizer = base.reference.model.speech_tokenizer.model
    rng = np.random.default_rng(samples)
    t = np.arange(samples) / 24000
    audio = (0.4 * np.sin(2 * np.pi * 150 * t) + 0.05 * rng.standard_normal(samples)).astype(np.float32)
    with torch.no_grad():
        expected = tokenizer.encode(torch.from_numpy(audio)[None],
                                    padding_mask=torch.ones(1, samples, dtype=torch.long)).audio_codes[0].numpy()
    ours = ClipCodes(ModelDir(base.dir)).of_audio(audio, 24000)
    assert ours.shape == expected.shape == (-(-samples // 1920), 16)
    assert len(np.unique(expected[:, 0])) > 1  # random codebooks: the codes vary
    np.testing.assert_array_equal(ours, expected)


def test_clip_codes_match_reference(base, clip, icl_run):
    item, _ = icl_run
    np.testing.assert_array_equal(ClipCodes(ModelDir(base.dir)).of_clip(clip), item.ref_code.numpy())


# The clip's 13 frames against a text that outlasts them (text rows left over as trailing rows), the clip three
# times over (38 frames) against a short text (the text track padded with T(tts_pad)), and the whole text up front
# (non_streaming_mode=True).
@pytest.mark.parametrize("text, repeats, non_streaming", [(CLONE_TEXT, 1, False), ("Hi.", 3, False),
                                                          (CLONE_TEXT, 1, True)])
def test_icl_prompt_matches_reference(base, clip, icl_run, text, repeats, non_streaming):
    item, run = icl_run
    audio = np.tile(read_wav(clip)[0], repeats)
    if (text, repeats, non_streaming) != (CLONE_TEXT, 1, False):
        item = reference.icl_prompt(base.reference, audio, CLIP_TEXT)[0]
        run = reference.generate(base.reference, text, 2, clone_prompt=[item], non_streaming_mode=non_streaming,
                                 language=clone_language(base))
    codes = ClipCodes(ModelDir(base.dir)).of_audio(audio, 24000)
    np.testing.assert_array_equal(codes, item.ref_code.numpy())
    embedding = SpeakerEmbeddings(ModelDir(base.dir)).of_audio(audio, 24000)
    prompt = PromptBuilder(ModelDir(base.dir)).build(text, speaker_embedding=embedding,
                                                     non_streaming_mode=non_streaming, ref_text=CLIP_TEXT,
                                                     ref_codes=codes, language=clone_language(base))
    assert prompt.prefill.shape == run.prefill.shape
    np.testing.assert_allclose(prompt.prefill, run.prefill, atol=1e-5, rtol=0)
    # The reference's trailing rows: the text rows left over, or one T(tts_pad) row (what every later frame gets).
    if len(prompt.trailing):
        np.testing.assert_allclose(prompt.trailing, run.trailing, atol=1e-5, rtol=0)
    else:
        np.testing.assert_allclose(run.trailing, prompt.pad[None], atol=1e-5, rtol=0)
    print(f"\nICL prompt ({text!r}, {len(codes)} clip frames, non_streaming_mode={non_streaming}): "
          f"{len(prompt.prefill)} rows, {len(prompt.trailing)} trailing")


def test_icl_greedy_codes_and_pcm_match_reference(base, clip, icl_run):
    item, run = icl_run
    assert min(run.margins) >= MIN_MARGIN, "a near-tie: choose another seed (see the module doc)"
    settings = EngineSettings(model=str(base.dir), device="CPU", greedy=True, kv_precision="f32",
                              inference_precision="f32", max_frames=FRAMES)
    engine = Speech(ModelDir(base.dir), settings,
                    voices=VoicesSettings(clone=(CloneVoice("anna", clip, CLIP_TEXT),)))
    engine.start()
    try:
        codes, pcm = synthesize(engine, Case("base", CLONE_TEXT, "anna"))
    finally:
        engine.stop()
    assert codes.shape == run.codes.shape
    np.testing.assert_array_equal(codes, run.codes)
    # The reference cuts int(ref_frames / total_frames * samples) samples of the clip's part, the engine exactly 1920
    # per clip frame: the same here (float rounding makes the reference's one less for ~4% of length pairs).
    ref_frames, total = len(item.ref_code), len(item.ref_code) + len(run.codes)
    assert int(ref_frames / total * (total * 1920)) == ref_frames * 1920
    assert pcm.shape == run.pcm.shape
    print(f"\nICL PCM: max abs diff {np.abs(pcm - run.pcm).max():.2e} (values up to {np.abs(run.pcm).max():.2f})")
    np.testing.assert_allclose(pcm, run.pcm, atol=PCM_TOLERANCE, rtol=0)


LONG_TRANSCRIPT = ("Good morning, this is Anna speaking from the kitchen, where the kettle is on and the radio plays "
                   "quietly; the weather today will be mild and dry, with a light wind from the west and sunshine "
                   "later in the afternoon, so the washing can go outside.")


def test_icl_prefix_cache_reuses_the_clip_rows_and_changes_no_code(base, tmp_path):
    """A cloned voice's second and later sentences take the clip's prompt rows from the prefix cache: fewer rows
    prefilled, and (greedy, f32 KV) the same codes as with the cache off. What is shared is the prompt before the
    sentence's text: role, codec tags and the clip's transcript (the sentence's text rows lie over the clip's codes
    right after the transcript, in either layout). A 6 s clip with a long transcript: a full 32-row block."""
    rng = np.random.default_rng(1)
    t = np.arange(6 * 24000) / 24000
    samples = np.round((0.3 * np.sin(2 * np.pi * 150 * t) + 0.02 * rng.standard_normal(len(t))) * 32767)
    long_clip = tmp_path / "long.wav"
    with wave.open(str(long_clip), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(24000)
        out.writeframes(samples.astype("<i2").tobytes())
    texts = [CLONE_TEXT, "The garage door is open.", "Good night, everybody."]

    def run(prefix_caching: bool) -> tuple[list[np.ndarray], int, int]:
        settings = EngineSettings(model=str(base.dir), device="CPU", greedy=True, kv_precision="f32",
                                  inference_precision="f32", max_frames=FRAMES, prefix_caching=prefix_caching)
        engine = Speech(ModelDir(base.dir), settings,
                        voices=VoicesSettings(clone=(CloneVoice("anna", long_clip, LONG_TRANSCRIPT),)))
        engine.start()
        try:
            codes = [synthesize(engine, Case("base", text, "anna"))[0] for text in texts]
            return codes, engine.stats().rows_reused, engine.core.runner.block_size
        finally:
            engine.stop()

    cached, reused, block = run(True)
    plain, none, _ = run(False)
    print(f"\nprefix cache: {reused} prompt rows reused over {len(texts) - 1} later sentences (block {block})")
    assert none == 0 and reused >= (len(texts) - 1) * block
    for with_cache, without in zip(cached, plain, strict=True):
        np.testing.assert_array_equal(with_cache, without)


# ---- (e) U8 KV cache ---------------------------------------------------------------------------------------------

def _greedy(runner: PagedRunner, prompt, frames: int, forced: list[tuple[np.ndarray, np.ndarray]] | None = None):
    """Greedy frames straight on a runner, until eos or `frames`: [(codes, next input row)] and each frame's
    codebook-0 logits. With `forced`, the sequence continues from those frames instead of its own (teacher
    forcing: both caches then hold the same history, so their distributions compare like for like)."""
    seq = Sequence(0, prompt.prefill, prompt.trailing, prompt.pad, frame_cap=frames,
                   sampling=SamplingParams(temperature=0.0, sub_temperature=0.0))
    seq.block_table = list(range(-(-(len(prompt.prefill) + frames) // runner.block_size)))
    frames_out, logits = [], []
    for t in range(len(forced) if forced else frames):
        out = runner.step([ScheduledEntry(seq, seq.num_computed, seq.num_uncomputed, True)], want_logits=True)
        seq.num_computed = seq.num_rows
        logits.append(out.logits[0].copy())
        if out.is_eos[0] and not forced:
            break
        frame = (out.codes[0].copy(), out.next_embeds[0].copy())
        frames_out.append(frame)
        seq.append_frame(*(forced[t] if forced else frame))
    return frames_out, np.stack(logits[:len(frames_out)])


def _distribution(logits: np.ndarray, codebook: int, eos: int) -> np.ndarray:
    """Codebook 0's distributions [frames, codebook + 1] at temperature 1 over what generation allows: the codes
    and eos."""
    allowed = np.concatenate([logits[:, :codebook], logits[:, eos:eos + 1]], 1).astype(np.float64)
    p = np.exp(allowed - allowed.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def test_u8_kv_cache_against_f32(custom_voice):
    manifest = json.loads((custom_voice.dir / "chorus.json").read_text())
    prompt = PromptBuilder(ModelDir(custom_voice.dir)).build(CASES["ryan"].text, speaker="ryan")
    frames = 48

    def runner(kv: str) -> PagedRunner:
        return PagedRunner(ModelDir(custom_voice.dir),
                           RunnerOptions(device="CPU", kv_precision=kv, inference_precision="f32",
                                         num_blocks=32))

    f32_frames, f32_logits = _greedy(runner("f32"), prompt, frames)
    u8 = runner("u8")
    assert u8.kv_precision == "u8"
    forced_frames, forced_logits = _greedy(u8, prompt, frames, forced=f32_frames)
    u8_frames, _ = _greedy(u8, prompt, len(f32_frames))
    frames = min(len(f32_frames), len(u8_frames))
    f32_codes = np.stack([c for c, _ in f32_frames])
    same = np.all(np.stack([c for c, _ in u8_frames[:frames]]) == f32_codes[:frames], axis=1)
    first_difference = int(np.argmin(same)) if not same.all() else frames

    eos = manifest["codec_ids"]["eos"]
    p = _distribution(f32_logits, manifest["codebook_size"], eos)
    q = _distribution(forced_logits, manifest["codebook_size"], eos)
    kl = np.sum(p * (np.log(p) - np.log(q)), axis=1)
    forced_agreement = np.mean(np.stack([c for c, _ in forced_frames]) == f32_codes)
    print(f"\nU8 vs f32 KV, {len(f32_frames)} greedy frames: codebook-0 KL mean {kl.mean():.2e} max {kl.max():.2e}; "
          f"code agreement with the same history {forced_agreement:.3f}; free-running, the first "
          f"{first_difference} frames identical (random weights are chaotic after a first difference)")
    assert kl.mean() <= 1e-3
