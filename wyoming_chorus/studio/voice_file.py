"""The studio's voices file (studio.voices_file): a YAML file with a voices section as config.yaml has, holding the
clone and design entries the studio made and the default it picked, with their clips in a clips/ folder beside it.
The engine adds its voices to the config's and re-reads it when it changes (frontend/voices.py), so what the studio
writes here is what Home Assistant's next Describe lists. Entries can be moved into a config file as they are.

Changes are made to a VoicesSettings (read and validated as the engine reads it) and written back whole, atomically,
in an order that a kill at any moment leaves consistent: a new clip is in place before the entry that names it, and
an entry is gone before its clip. What a kill can leave is a clip no entry names, or a temporary file; both are
swept at the next start (`sweep_orphans`).
"""
from __future__ import annotations

import dataclasses
import logging
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

import yaml

from wyoming_chorus.config import CloneVoice, ConfigError, DesignVoice, VoicesSettings, load_voices, parse_voices
from wyoming_chorus.studio.atomic import atomic_write

_LOG = logging.getLogger(__name__)
_CLIP_NAME = re.compile(r"[a-z0-9-]*-[0-9a-f]{8}\.wav")  # as new_clip names them
_HEADER = ("# Written by wyoming-chorus' voice studio (studio.voices_file). Its entries can be moved into a config\n"
           "# file's voices section as they are, their clips with them.\n")


class StudioVoiceFile:
    def __init__(self, path: Path):
        self.path = path
        self.clips = path.parent / "clips"

    def read(self) -> VoicesSettings:
        """The studio's voices section; empty before the first voice. ConfigError if the file does not fit."""
        return load_voices(self.path) if self.path.exists() else parse_voices(None, self.path)

    def write(self, voices: VoicesSettings) -> None:
        section: dict = {}
        if voices.default is not None:
            section["default"] = voices.default
        section["design"] = {d.name: _set(instruct=d.instruct, language=d.language, speaker=d.speaker)
                             for d in voices.design}
        section["clone"] = {c.name: _set(wav=c.wav.as_posix(), text=c.text, language=c.language) for c in voices.clone}
        text = _HEADER + yaml.safe_dump({"voices": section}, sort_keys=False, allow_unicode=True, width=1000)
        atomic_write(self.path, text.encode("utf-8"))

    def new_clip(self, name: str) -> Path:
        """A path for a new clip: named by us (from the voice's checked name and a random tag), never by a client."""
        slug = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:24] or "voice"
        return self.clips / f"{slug}-{secrets.token_hex(4)}.wav"

    def sweep_orphans(self, in_use: Iterable[Path]) -> list[str]:
        """Removes what a killed server left in the studio's folders: temporary files (a write or an upload that
        did not finish) and clips of the studio's naming that neither its voices file nor `in_use` (every voice's
        clip, the config's included) names. Nothing is removed while the voices file does not parse (edited by
        hand: what it meant is not known). The names removed."""
        try:
            named = {self.path.parent / clone.wav for clone in self.read().clone}
        except ConfigError as error:
            _LOG.warning("%s does not parse (%s): the studio's clips are left as they are", self.path, error)
            return []
        keep = {path.resolve() for path in (*named, *in_use)}
        removed = []
        for folder in (self.path.parent, self.clips):
            for path in folder.glob(".*.tmp") if folder.is_dir() else ():
                removed.append(path)
        if self.clips.is_dir():
            removed += [path for path in self.clips.iterdir()
                        if _CLIP_NAME.fullmatch(path.name) and path.resolve() not in keep]
        for path in removed:
            path.unlink(missing_ok=True)
        if removed:
            _LOG.info("the studio removed what an interrupted change left: %s", ", ".join(p.name for p in removed))
        return [path.name for path in removed]

    def clip_path(self, clone: CloneVoice) -> Path | None:
        """Where a clone entry's clip is, if it is one of the studio's own (inside clips/): only those it deletes."""
        path = (self.path.parent / clone.wav).resolve()
        return path if path.parent == self.clips.resolve() else None


def with_clone(voices: VoicesSettings, clone: CloneVoice) -> VoicesSettings:
    return dataclasses.replace(voices, clone=(*voices.clone, clone))


def with_design(voices: VoicesSettings, design: DesignVoice) -> VoicesSettings:
    return dataclasses.replace(voices, design=(*voices.design, design))


def without(voices: VoicesSettings, name: str) -> tuple[VoicesSettings, CloneVoice | None]:
    """`voices` without the entry `name` (and without it as the default); the clone entry removed, if it was one."""
    fold = name.casefold()
    removed = next((c for c in voices.clone if c.name.casefold() == fold), None)
    default = None if voices.default is not None and voices.default.casefold() == fold else voices.default
    return dataclasses.replace(voices, default=default,
                               design=tuple(d for d in voices.design if d.name.casefold() != fold),
                               clone=tuple(c for c in voices.clone if c.name.casefold() != fold)), removed


def entry_names(voices: VoicesSettings) -> set[str]:
    """The names of the studio's own entries, case-folded (as voice names are compared)."""
    return {design.name.casefold() for design in voices.design} | {clone.name.casefold() for clone in voices.clone}


def _set(**fields) -> dict:
    """The fields that are set (None means the default: left out, as a household would write it)."""
    return {key: value for key, value in fields.items() if value is not None}
