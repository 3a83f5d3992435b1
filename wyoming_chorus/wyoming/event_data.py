"""What a synthesize event's data must hold. The event reader hands on any valid JSON; a reply refuses the rest with
a MalformedEvent (its `error` event), and the connection goes on."""
from __future__ import annotations

from typing import Any

from wyoming.tts import SynthesizeVoice

from wyoming_chorus.errors import MalformedEvent
from wyoming_chorus.wyoming.event_reader import json_kind


def _fields(data: Any) -> dict[str, Any]:
    """An event's data; the reader hands on data that is valid JSON but not an object, for the reply to refuse."""
    if not isinstance(data, dict):
        raise MalformedEvent(f"the event's data must be an object, got {json_kind(data)}")
    return data


def event_text(data: Any) -> str:
    text = _fields(data).get("text")
    if not isinstance(text, str):
        raise MalformedEvent("the event needs a 'text' string")
    return text


def event_voice(data: Any) -> SynthesizeVoice | None:
    """The requested voice; None (Home Assistant's default) lets the engine pick its default voice."""
    raw = _fields(data).get("voice")
    if raw is None:
        return None
    fields = ("name", "language", "speaker")
    if not isinstance(raw, dict) or not all(isinstance(raw.get(f), (str, type(None))) for f in fields):
        raise MalformedEvent("'voice' must be an object with string name, language and speaker")
    if all(raw.get(f) is None for f in fields):
        return None
    return SynthesizeVoice(name=raw.get("name"), language=raw.get("language"), speaker=raw.get("speaker"))
