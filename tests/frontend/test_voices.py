"""Voices: model speakers, VoiceDesign presets and clone clips from the config, languages, the default voice, and
re-reading the voices section while the server runs."""
from __future__ import annotations

import asyncio
import logging
import wave
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeVoice

from wyoming_chorus.config import (
    ConfigError,
    EngineSettings,
    MetricsSettings,
    ServerSettings,
    Settings,
    VoicesSettings,
    ZeroconfSettings,
    load_settings,
    load_voices,
)
from wyoming_chorus.errors import InvalidText, RequestFailed, UnknownVoice
from wyoming_chorus.frontend.voices import Voices, build_voices
from wyoming_chorus.graphs.speaker_encoder import build_speaker_encoder, speaker_encoder_shapes
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.speech import Speech

from helpers import ServiceThread, describe, free_port, touch_later
from voice_models import MANIFEST, SPEAKER_ENCODER, TINY, model_variant

ALL = ("zh", "en", "de", "it", "pt", "es", "ja", "ko", "fr", "ru")  # the real model's ten, in its config's order
ENGLISH_FIRST = ("en", "zh", "de", "it", "pt", "es", "ja", "ko", "fr", "ru")


def voices_from(tmp_path: Path, yaml_text: str) -> VoicesSettings:
    path = tmp_path / "config.yaml"
    path.write_text(yaml_text)
    return load_settings(path).voices


# ---- which voices a model offers -------------------------------------------------------------------------------

def test_every_speaker_is_a_voice_with_the_models_languages():
    voices = build_voices(MANIFEST, VoicesSettings())
    assert [(v.name, v.speaker, v.languages) for v in voices] == [
        ("ryan", "ryan", ENGLISH_FIRST), ("serena", "serena", ALL),  # each speaker's native language first
        ("eric", "eric", ALL)]  # his dialect where he speaks Chinese, every other language plainly
    assert all(v.instruct is None and v.language is None for v in voices)


def test_the_default_voice_comes_first_and_must_exist(tmp_path):
    voices = build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  default: Serena\n"))
    assert [v.name for v in voices] == ["serena", "ryan", "eric"]
    with pytest.raises(ConfigError, match=r"^voices\.default: no voice 'bob'"):
        build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  default: bob\n"))


def test_a_voice_language_narrows_the_listed_languages(tmp_path):
    voices = build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  language: de_DE\n"))
    assert all(v.languages == ("de_DE",) and v.language == "de_DE" for v in voices)
    with pytest.raises(ConfigError, match=r"^voices\.language: the model does not speak 'nl'"):
        build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  language: nl\n"))


def test_design_presets_style_a_speaker_on_a_custom_voice_model(tmp_path):
    settings = voices_from(tmp_path, "voices:\n  design:\n    butler: A calm deep voice.\n"
                                     "    nurse: {instruct: A soft voice., speaker: Serena, language: fr}\n")
    by_name = {v.name: v for v in build_voices(MANIFEST, settings)}
    butler, nurse = by_name["butler"], by_name["nurse"]
    assert (butler.instruct, butler.speaker, butler.languages) == ("A calm deep voice.", "ryan", ALL)
    assert (nurse.speaker, nurse.language, nurse.languages) == ("serena", "fr", ("fr",))
    with pytest.raises(ConfigError, match=r"^voices\.design\.x\.speaker: no speaker 'bob'"):
        build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  design:\n    x: {instruct: hi, speaker: bob}\n"))
    with pytest.raises(ConfigError, match=r"^voices: two voices are named 'Ryan'"):
        build_voices(MANIFEST, voices_from(tmp_path, "voices:\n  design:\n    Ryan: hi\n"))


def test_design_presets_are_the_voices_of_a_voice_design_model(tmp_path):
    manifest = {**MANIFEST, "name": "vd", "model_type": "voice_design", "speakers": {}, "speaker_is_dialect": {}}
    assert [v.name for v in build_voices(manifest, VoicesSettings())] == ["vd"]  # none configured: the model's own
    voices = build_voices(manifest, voices_from(tmp_path, "voices:\n  design:\n    butler: A calm deep voice.\n"))
    assert [(v.name, v.speaker, v.instruct) for v in voices] == [("butler", None, "A calm deep voice.")]
    with pytest.raises(ConfigError, match=r"^voices\.design\.butler\.speaker: the model has no speakers"):
        build_voices(manifest, voices_from(tmp_path, "voices:\n  design:\n    butler: {instruct: x, speaker: a}\n"))
    ignoring = {**manifest, "supports_instruct": False}  # 0.6B: an instruction would be dropped, so no such voice
    assert [v.name for v in build_voices(ignoring, voices_from(tmp_path, "voices:\n  design:\n    b: x\n"))] == ["vd"]


def test_clone_voices_need_a_base_model_and_an_existing_clip(tmp_path):
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "anna.wav").write_bytes(b"RIFF")
    settings = voices_from(tmp_path, "voices:\n  clone:\n    anna: {wav: clips/anna.wav, text: Hello there.}\n"
                                     "    gone: {wav: /nowhere/gone.wav, text: Hi., language: de}\n")
    base = {**MANIFEST, "name": "b", "model_type": "base", "speakers": {}, "speaker_is_dialect": {}}
    voices = build_voices(base, settings)
    assert [v.name for v in voices] == ["anna"]  # the missing clip is not listed
    assert voices[0].clip.wav == tmp_path / "clips" / "anna.wav" and voices[0].clip.text == "Hello there."
    assert "anna" not in [v.name for v in build_voices(MANIFEST, settings)]  # not a Base model


def test_a_clone_voice_without_a_transcript_is_allowed(tmp_path):
    settings = voices_from(tmp_path, "voices:\n  clone:\n    anna: {wav: anna.wav}\n")  # its embedding only
    assert settings.clone[0].text is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("voices:\n  language: english\n", "voices.language"),
        ("voices:\n  default: ''\n", "voices.default"),
        ("voices:\n  design: [a, b]\n", "voices.design"),
        ("voices:\n  design:\n    butler: ''\n", "voices.design.butler.instruct"),
        ("voices:\n  design:\n    butler: {language: en}\n", "voices.design.butler"),
        ("voices:\n  design:\n    butler: {instruct: x, pitch: 3}\n", "voices.design.butler.pitch"),
        ("voices:\n  design:\n    butler: {instruct: x, language: 7}\n", "voices.design.butler.language"),
        ("voices:\n  clone:\n    anna: a.wav\n", "voices.clone.anna"),
        ("voices:\n  clone:\n    anna: {text: hi}\n", "voices.clone.anna"),
        ("voices:\n  clone:\n    anna: {wav: 3, text: hi}\n", "voices.clone.anna.wav"),
        ("voices:\n  voice: x\n", "voices.voice"),
    ],
)
def test_an_invalid_voices_entry_names_its_key(tmp_path, text, key):
    with pytest.raises(ConfigError) as raised:
        voices_from(tmp_path, text)
    message = str(raised.value)
    assert message.startswith(f"{key}: ") and "\n" not in message


# ---- which voice a request gets --------------------------------------------------------------------------------

def test_requests_find_voices_by_name_speaker_or_the_models_old_name(tmp_path):
    voices = Voices(ModelDir(TINY), voices_from(tmp_path, "voices:\n  default: serena\n  design:\n    butler: calm\n"))
    assert voices.find(None, None).name == "serena"
    assert voices.find("RYAN", None).name == "ryan"
    assert voices.find(None, "eric").name == "eric"
    assert voices.find("ryan", "ryan").name == "ryan"
    assert voices.find("butler", "ryan").instruct == "calm"
    assert voices.find("tiny", "eric").name == "eric"  # the single voice of earlier versions, with a speaker
    assert voices.find("tiny", None).name == "serena"
    for name, speaker in (("nobody", None), (None, "nobody"), ("ryan", "serena")):
        with pytest.raises(UnknownVoice):
            voices.find(name, speaker)


def test_language_codes_map_to_the_models_languages():
    voices = Voices(ModelDir(TINY), VoicesSettings())
    assert [voices.model_language(c) for c in (None, "en", "de_DE", "fr-CA", "ZH")] == [
        "auto", "english", "german", "french", "chinese"]
    with pytest.raises(UnknownVoice, match="does not speak 'nl'"):
        voices.model_language("nl")


# ---- re-reading the config file --------------------------------------------------------------------------------

def test_an_edited_voices_section_is_re_read_and_a_broken_one_ignored(tmp_path, caplog):
    path = tmp_path / "config.yaml"
    path.write_text("voices:\n  design:\n    butler: calm\n")
    voices = Voices(ModelDir(TINY), load_voices(path))
    assert "butler" in [v.name for v in voices.current()]
    touch_later(path, "voices:\n  design:\n    butler: calm\n    maid: bright\n")
    assert [v.name for v in voices.current()][-2:] == ["butler", "maid"]
    with caplog.at_level(logging.WARNING):
        touch_later(path, "voices:\n  design:\n    maid: {instruct: x, speaker: bob}\n")
        assert [v.name for v in voices.current()][-2:] == ["butler", "maid"]
    assert "voices.design.maid.speaker" in caplog.text and "keeping the voices in use" in caplog.text
    path.unlink()
    assert [v.name for v in voices.current()][-2:] == ["butler", "maid"]


# ---- the engine: language, normalisation, cloning --------------------------------------------------------------

def test_the_engine_normalises_in_the_requests_or_the_voices_language(tmp_path, monkeypatch):
    engine = Speech(ModelDir(TINY), EngineSettings(max_text_length=12),
                    voices=voices_from(tmp_path, "voices:\n  design:\n    hanna: {instruct: warm, language: de}\n"))
    built = []
    real_build = engine.requests.prompts.build
    monkeypatch.setattr(engine.requests.prompts, "build",
                        lambda text, **kw: built.append((text, kw)) or real_build(text, **kw))
    with pytest.raises(InvalidText):
        engine.requests.build("Es ist 21.5 °C", "hanna", None, None, seed=0)  # 14 characters
    # the limit counts what the client sent (12 characters here), not the longer spoken form
    engine.requests.build("It is 5 °C.", None, None, None, seed=0)
    engine.requests.build("Es ist 5 °C.", "hanna", None, None, seed=0)
    engine.requests.build("Es ist 5 °C.", None, None, "de_DE", seed=0)
    assert [text for text, _ in built] == ["It is five degrees Celsius.", "Es ist fünf Grad Celsius.",
                                          "Es ist fünf Grad Celsius."]
    assert [(kw["language"], kw["speaker"], kw["instruct"]) for _, kw in built] == [
        ("english", "ryan", None), ("german", "ryan", "warm"), ("german", "ryan", None)]  # English detected


def write_clip(path: Path, seconds: float = 1.0, rate: int = 24000, channels: int = 1) -> Path:
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    tone = 0.3 * np.sin(2 * np.pi * 180 * t) + 0.02 * rng.standard_normal(len(t))
    samples = np.repeat((tone * 32767).astype("<i2")[:, None], channels, 1)
    with wave.open(str(path), "wb") as clip:
        clip.setnchannels(channels)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(samples.tobytes())
    return path


def test_a_clone_voice_without_a_speaker_encoder_is_refused_with_a_clear_error(tmp_path):
    write_clip(tmp_path / "anna.wav")
    settings = voices_from(tmp_path, "voices:\n  clone:\n    anna: {wav: anna.wav, text: Hello there.}\n")
    model = model_variant(tmp_path, "base")
    engine = Speech(ModelDir(model), EngineSettings(model=str(model)), voices=settings)
    engine.start()  # the warm-up does not trip over the default voice being a clone
    try:
        assert [v.name for v in engine.voices] == ["anna"]
        with pytest.raises(RequestFailed, match="no speaker encoder"):
            engine.requests.build("Hello.", None, None, None, seed=0)
    finally:
        engine.stop()


def test_a_clone_voice_speaks_with_its_clips_speaker_embedding(tmp_path, monkeypatch):
    model = model_variant(tmp_path, "base")
    rng = np.random.default_rng(3)
    weights = {name: rng.standard_normal(shape).astype(np.float32) * 0.2
               for name, shape in speaker_encoder_shapes(SPEAKER_ENCODER).items()}
    ov.save_model(build_speaker_encoder(weights, SPEAKER_ENCODER), str(model / "speaker_encoder.xml"))
    write_clip(tmp_path / "anna.wav", rate=16000, channels=2)  # resampled to 24 kHz, channels averaged
    (tmp_path / "bert.wav").write_bytes(b"RIFF")
    settings = voices_from(tmp_path, "voices:\n  clone:\n    anna: {wav: anna.wav, text: Hello there.}\n"
                                     "    bert: {wav: bert.wav, text: Hi.}\n")
    engine = Speech(ModelDir(model), EngineSettings(model=str(model)), voices=settings)
    built = []
    real_build = engine.requests.prompts.build
    monkeypatch.setattr(engine.requests.prompts, "build", lambda text, **kw: built.append(kw) or real_build(text, **kw))
    engine.requests.build("Hello.", "anna", None, None, seed=0)
    engine.requests.build("Hello.", "anna", None, None, seed=0)
    first, second = built
    assert first["speaker_embedding"] is second["speaker_embedding"]  # computed once, then cached
    assert first["speaker_embedding"].shape == (MANIFEST["hidden_size"],)
    assert first["non_streaming_mode"] is False and first["speaker"] is None
    with pytest.raises(RequestFailed, match="bert.wav"):
        engine.requests.build("Hello.", "bert", None, None, seed=0)


# ---- the server: Describe lists voices added while it runs -----------------------------------------------------

async def speak(port: int, voice: SynthesizeVoice) -> list[str]:
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Synthesize("Hi.", voice=voice).event())
        types = []
        while (event := await asyncio.wait_for(client.read_event(), 60)) is not None:
            types.append(event.type)
            if event.type == "audio-stop":
                return types
    return types


async def test_a_voice_added_to_the_config_is_listed_at_the_next_describe(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("voices:\n  design:\n    butler: A calm deep voice.\n")
    settings = Settings(
        server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=5.0),
        zeroconf=ZeroconfSettings(enabled=False),
        engine=EngineSettings(model=str(model_variant(tmp_path, "voice_design")), seed=1),
        metrics=MetricsSettings(enabled=False),
        voices=load_voices(config),
    )
    service = ServiceThread(settings)
    await asyncio.to_thread(service.start)
    try:
        program = (await describe(service.port)).tts[0]
        assert [(v.name, v.speakers, v.languages) for v in program.voices] == [("butler", None, list(ALL))]
        touch_later(config, "voices:\n  design:\n    butler: A calm deep voice.\n"
                            "    maid: {instruct: A bright voice., language: de}\n")
        program = (await describe(service.port)).tts[0]
        assert [(v.name, v.languages) for v in program.voices] == [("butler", list(ALL)), ("maid", ["de"])]
        assert program.voices[1].description.endswith("designed voice: A bright voice.")
        types = await speak(service.port, SynthesizeVoice(name="maid"))
        assert types[0] == "audio-start" and types[-1] == "audio-stop" and "audio-chunk" in types
        types = await speak(service.port, SynthesizeVoice(name="nobody"))
        assert "audio-chunk" not in types
    finally:
        await asyncio.to_thread(service.stop)


def test_a_random_models_voices_say_they_are_test_voices():
    voices = build_voices({"name": "tiny", "model_type": "custom_voice", "random_weights": True,
                           "speakers": {"ryan": 3000}, "languages": {"english": 2050}}, VoicesSettings())
    assert voices[0].description.startswith("test voice, random model, no speech")
    real = build_voices({"name": "x", "model_type": "custom_voice", "speakers": {"ryan": 3000},
                         "languages": {"english": 2050}}, VoicesSettings())
    assert "test voice" not in real[0].description
