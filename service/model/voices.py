"""The voices a model offers, as Wyoming clients see them.

Home Assistant matches voices to a pipeline by language code ("en"), while Qwen3-TTS names languages in words
("english"); this module translates both ways.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_LANGUAGE_CODES = {
    "english": "en", "chinese": "zh", "german": "de", "french": "fr", "spanish": "es", "italian": "it",
    "japanese": "ja", "korean": "ko", "portuguese": "pt", "russian": "ru",
}


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    description: str
    languages: tuple[str, ...]          # codes as clients send them
    speakers: tuple[str, ...]           # empty when the model has no named speakers
    default_speaker: str | None
    instruct: str | None = None         # VoiceDesign: the instruction that defines the voice

    def model_language(self, code: str | None) -> str:
        """The model's name for a client's language code; "auto" lets the model decide."""
        if code is None:
            return "auto"
        code = code.lower().split("_")[0].split("-")[0]
        for name, known in _LANGUAGE_CODES.items():
            if known == code:
                return name
        return "auto"


def load_voices(model_dir: Path) -> list[VoiceInfo]:
    manifest = json.loads((model_dir / "chorus.json").read_text())
    speakers = tuple(manifest.get("speakers", {}))
    languages = tuple(_LANGUAGE_CODES.get(name, name) for name in manifest.get("languages", {}))
    return [
        VoiceInfo(
            name=manifest["name"],
            description=f"Qwen3-TTS {manifest['name']} ({manifest['model_type']})",
            languages=languages,
            speakers=speakers,
            default_speaker=speakers[0] if speakers else None,
        )
    ]
