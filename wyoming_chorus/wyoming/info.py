"""Describe -> Info: what this server is and the voices it has, built per Describe so that voices added to the
config file since the start are listed at once."""
from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from wyoming.info import Attribution, Info, TtsProgram, TtsVoice

from wyoming_chorus.speech.speech_engine import Voice

PROGRAM_NAME = "chorus"
_ATTRIBUTION = Attribution(name="Qwen3-TTS (Alibaba Qwen team)", url="https://github.com/QwenLM/Qwen3-TTS")


def program_version() -> str | None:
    try:
        return version("wyoming-chorus")
    except PackageNotFoundError:  # running from a source checkout that was never installed
        return None


def build_info(voices: Sequence[Voice], program_version: str | None) -> Info:
    """Each voice is one TtsVoice with no speakers: a model's speakers are voices of their own."""
    return Info(
        tts=[
            TtsProgram(
                name=PROGRAM_NAME,
                attribution=_ATTRIBUTION,
                installed=True,
                description="Qwen3-TTS on OpenVINO; many rooms batched through one engine",
                version=program_version,
                voices=[
                    TtsVoice(
                        name=voice.name,
                        attribution=_ATTRIBUTION,
                        installed=True,
                        description=voice.description,
                        version=program_version,
                        languages=list(voice.languages),
                    )
                    for voice in voices
                ],
                supports_synthesize_streaming=True,
            )
        ]
    )
