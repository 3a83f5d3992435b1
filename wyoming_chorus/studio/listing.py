"""What GET api/voices tells the page: each voice (the default first) with what it is, and a saved default that names
no voice of this model (saved before the model was switched), which the page offers to fix."""
from __future__ import annotations

import dataclasses

from wyoming_chorus.config import ConfigError, VoicesSettings
from wyoming_chorus.frontend.voices import VoiceInfo, Voices


def voice_entry(voice: VoiceInfo, default: bool, own: set[str]) -> dict:
    return {"name": voice.name, "kind": kind(voice), "description": voice.description,
            "languages": list(voice.languages), "preview_language": preview_language(voice), "default": default,
            "studio": voice.name.casefold() in own}


def kind(voice: VoiceInfo) -> str:
    if voice.clip is not None:
        return "clone"
    if voice.instruct is not None:
        return "design"
    return "speaker" if voice.speaker is not None else "model"


def preview_language(voice: VoiceInfo) -> str | None:
    """The language a voice is previewed in unless the page picks one: its own, else English if it speaks it."""
    if voice.language is not None:
        return voice.language
    return "en" if "en" in voice.languages else next(iter(voice.languages), None)


def stale_default(voices: Voices, studio: VoicesSettings) -> str | None:
    """The studio's saved default when it names no voice of this model; the engine speaks with the first voice
    instead (frontend/voices.py)."""
    if studio.default is None:
        return None
    try:
        named = voices.check_studio(dataclasses.replace(studio, default=None))
    except ConfigError:  # the file does not fit for another reason: not a stale default
        return None
    return None if any(v.name.casefold() == studio.default.casefold() for v in named) else studio.default
