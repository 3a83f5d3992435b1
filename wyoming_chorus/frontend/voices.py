"""The voices a model offers under the voices section of the config, as Wyoming clients see them.

- CustomVoice: every speaker is a voice of its own, named by the speaker: Home Assistant offers voices in one list,
  while a voice's speakers would hide behind a second picker.
- voices.design: a voice made by an instruction. On a VoiceDesign model the instruction describes the voice; on a
  CustomVoice model it styles one of the speakers. Models that ignore instructions (0.6B) list none.
- voices.clone: a voice cloned from a reference clip, listed when the model is a Base model and the clip exists.
- A model that ends up with no voice gets one named after the model, so that a server always has a default.

Home Assistant matches voices to a pipeline by language code ("en"), while Qwen3-TTS names languages in words
("english"); this module translates both ways. Every speaker speaks every language of the model (best its own, listed
first); a dialect speaker (Eric: Sichuan) speaks its dialect where the text is Chinese or its language is left to
the model, and the other languages plainly (prompt.py). `Voices` re-reads the section when the config file changes.

The voice studio (wyoming_chorus/studio) keeps the voices it makes in a voices file of its own (VoicesSettings.
studio_file): its entries come after the config's and its default replaces the config's (`with_studio`), and it is
re-read as the config file is. A studio file that does not fit is logged and left out; it never stops the server.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from wyoming_chorus.config import CloneVoice, ConfigError, VoicesSettings, load_voices
from wyoming_chorus.errors import UnknownVoice
from wyoming_chorus.modeldir.manifest import ModelDir

_LOG = logging.getLogger(__name__)

_LANGUAGE_CODES = {
    "english": "en", "chinese": "zh", "german": "de", "french": "fr", "spanish": "es", "italian": "it",
    "japanese": "ja", "korean": "ko", "portuguese": "pt", "russian": "ru",
}
_DIALECT_CODE = "zh"  # Qwen3-TTS' dialects ("sichuan_dialect", "beijing_dialect") are all Chinese
# The CustomVoice speakers' native languages (the model card): listed first among a speaker's languages.
NATIVE = {"vivian": "zh", "serena": "zh", "uncle_fu": "zh", "dylan": "zh", "eric": "zh", "ryan": "en", "aiden": "en",
          "ono_anna": "ja", "sohee": "ko"}


@dataclass(frozen=True)
class VoiceInfo:
    name: str
    description: str
    languages: tuple[str, ...]          # codes as clients send them
    speaker: str | None = None          # the model speaker (CustomVoice)
    instruct: str | None = None         # the instruction that makes (or styles) the voice
    language: str | None = None         # code the voice speaks unless a request says otherwise; None: auto
    clip: CloneVoice | None = None      # Base: the reference clip to clone


class Voices:
    """A model's voices under a voices section, re-read from its file when that changes (one stat per call)."""

    def __init__(self, model: ModelDir, settings: VoicesSettings):
        self._manifest = dataclasses.asdict(model.manifest)  # build_voices reads the voice fields of a mapping
        self._config = settings  # the config's own section as last read
        self._stamp = self._stamps()
        # Two threads enter: the front end finds voices, and the event loop lists them for a Describe, which must
        # show an edit at once without waiting behind the front end's work. The lock is taken only on a reload.
        self._lock = threading.Lock()
        self._voices = self._build(settings)  # a bad section fails the start (ConfigError)

    def current(self) -> tuple[VoiceInfo, ...]:
        """The voices, the default first; re-read when the config file changed since the last call."""
        stamp = self._stamps()
        if stamp != self._stamp:
            with self._lock:
                if stamp != self._stamp:
                    self._stamp = stamp
                    self._reload()
        return self._voices

    def find(self, name: str | None, speaker: str | None) -> VoiceInfo:
        """The voice a request names. No name: the speaker's voice, else the default. The model's own name (the
        only voice of earlier versions) counts as no name, so clients that remember it keep working."""
        voices = self.current()
        if name is None or (_fold(name) == _fold(self._manifest["name"]) and _named(voices, name) is None):
            name = speaker or voices[0].name
        voice = _named(voices, name)
        if voice is None:
            raise UnknownVoice(f"unknown voice {name!r}; installed: {', '.join(v.name for v in voices)}")
        if speaker is not None and _fold(speaker) != _fold(voice.speaker or ""):
            raise UnknownVoice(f"voice {voice.name!r} has no speaker {speaker!r}")
        return voice

    def model_language(self, code: str | None) -> str:
        """The model's name for a language code; None means "auto". A language the model lacks is refused."""
        if code is None:
            return "auto"
        name = model_language(code, self._manifest["languages"])
        if name is None:
            spoken = ", ".join(language_codes(self._manifest["languages"]))
            raise UnknownVoice(f"the model does not speak {code!r}; it speaks {spoken}")
        return name

    def check_studio(self, studio: VoicesSettings) -> tuple[VoiceInfo, ...]:
        """The voices there would be with `studio` as the studio's voices section; ConfigError if it does not fit
        (the studio checks a change with this before it writes it)."""
        return build_voices(self._manifest, with_studio(self._config, studio))

    def _stamps(self) -> tuple:
        return _stamp(self._config.source), _stamp(self._config.studio_file)

    def _build(self, config: VoicesSettings) -> tuple[VoiceInfo, ...]:
        """The voices of `config` and its studio file. The config's own problems are raised (the household's edit);
        the studio file's are logged and its voices left out."""
        voices = build_voices(self._manifest, config)
        path = config.studio_file
        if path is None or not path.is_file():
            return voices
        try:
            studio = load_voices(path)
            try:
                return build_voices(self._manifest, with_studio(config, studio))
            except ConfigError as error:
                if studio.default is None:
                    raise
                # A default saved for another model (the model was switched): its voices stay, the config's default
                # (or the first voice) speaks instead until the studio's page picks one.
                fallback = build_voices(self._manifest, with_studio(config, dataclasses.replace(studio, default=None)))
                _LOG.warning("%s: %s; the default voice is %s instead: pick one in the voice studio", path, error,
                             fallback[0].name)
                return fallback
        except ConfigError as error:
            _LOG.warning("%s: %s; the studio's voices are left out", path, error)
            return voices

    def _reload(self) -> None:
        source = self._config.source
        try:
            # Voices given in code, not read from a file, stay as they are; a studio file is re-read all the same.
            config = load_voices(source) if source is not None else self._config
            config = dataclasses.replace(config, studio_file=self._config.studio_file)
            self._voices = self._build(config)
        except ConfigError as error:
            _LOG.warning("%s: %s; keeping the voices in use", source or "voices", error)
            return
        self._config = config
        _LOG.info("voices re-read: %s", ", ".join(v.name for v in self._voices))


def with_studio(config: VoicesSettings, studio: VoicesSettings) -> VoicesSettings:
    """The config's voices section with the studio's added: its entries after the config's (its clip paths resolved
    against the studio file's folder), its default in place of the config's."""
    folder = studio.source.parent if studio.source is not None else Path()
    clones = tuple(dataclasses.replace(clone, wav=folder / clone.wav) for clone in studio.clone)  # absolute stays
    return dataclasses.replace(config, default=studio.default or config.default, design=config.design + studio.design,
                               clone=config.clone + clones)


def build_voices(manifest: dict, settings: VoicesSettings) -> tuple[VoiceInfo, ...]:
    """The voices of a model (its chorus.json) under `settings`; ConfigError names the key that does not fit."""
    model_type, speakers = manifest["model_type"], list(manifest.get("speakers", {}))
    languages = manifest.get("languages", {})
    dialects = manifest.get("speaker_is_dialect", {})

    def language(code: str | None, key: str) -> str | None:
        code = code or settings.language
        if code is not None and model_language(code, languages) is None:
            spoken = ", ".join(language_codes(languages))
            raise ConfigError(f"{key}: the model does not speak {code!r}; it speaks {spoken}")
        return code

    def voice(name: str, description: str, code: str | None, **fields) -> VoiceInfo:
        spoken = (code,) if code else language_codes(languages)
        return VoiceInfo(name, description, spoken, language=code, **fields)

    default_language = language(None, "voices.language")
    voices = []
    for speaker in speakers:
        dialect = dialects.get(speaker)
        description = f"Qwen3-TTS speaker {speaker}" + (f" ({dialect.replace('_', ' ')})" if dialect else "")
        native = NATIVE.get(speaker, _DIALECT_CODE if dialect else None)
        spoken = ((default_language,) if default_language
                  else tuple(sorted(language_codes(languages), key=lambda code: code != native)))
        voices.append(VoiceInfo(speaker, description, spoken, speaker=speaker, language=default_language))
    for entry in settings.design:
        key = f"voices.design.{entry.name}"
        if model_type == "base" or not manifest.get("supports_instruct", True):
            _LOG.warning("%s: this model (%s) ignores instructions; voice not listed", key, manifest["name"])
            continue
        if entry.speaker is not None and not speakers:
            raise ConfigError(f"{key}.speaker: the model has no speakers")
        speaker = entry.speaker.lower() if entry.speaker else (speakers[0] if speakers else None)
        if speaker is not None and speaker not in speakers:
            raise ConfigError(f"{key}.speaker: no speaker {entry.speaker!r}; the model has {', '.join(speakers)}")
        voices.append(voice(entry.name, f"designed voice: {entry.instruct}", language(entry.language, key),
                            speaker=speaker, instruct=entry.instruct))
    for clone in settings.clone:
        key = f"voices.clone.{clone.name}"
        clip = clone.wav if clone.wav.is_absolute() or settings.source is None else settings.source.parent / clone.wav
        if model_type != "base":
            _LOG.info("%s: voice cloning needs a Base model, not %s; voice not listed", key, model_type)
        elif not clip.is_file():
            _LOG.warning("%s: no clip at %s; voice not listed", key, clip)
        else:
            voices.append(voice(clone.name, f"cloned from {clip.name}", language(clone.language, key),
                                clip=CloneVoice(clone.name, clip, clone.text, clone.language)))
    if not voices:
        voices.append(voice(manifest["name"], f"Qwen3-TTS {manifest['name']} ({model_type})", default_language))
    if manifest.get("random_weights"):
        # Home Assistant shows the description as the voice's name: a random model's voices must not pass for real
        # ones (they make noise, not speech).
        voices = [dataclasses.replace(v, description=f"test voice, random model, no speech: {v.description}")
                  for v in voices]
    seen: set[str] = set()
    for v in voices:
        if _fold(v.name) in seen:
            raise ConfigError(f"voices: two voices are named {v.name!r} (model speakers count too)")
        seen.add(_fold(v.name))
    if settings.default is None:
        return tuple(voices)
    default = _named(voices, settings.default)
    if default is None:
        raise ConfigError(f"voices.default: no voice {settings.default!r}; voices: {', '.join(v.name for v in voices)}")
    return (default, *(v for v in voices if v is not default))


def model_language(code: str, languages) -> str | None:
    """The model's name for a client's language code ("de_DE" -> "german"), if the model speaks it."""
    primary = code.lower().replace("-", "_").split("_")[0]
    return next((name for name, known in _LANGUAGE_CODES.items() if known == primary and name in languages), None)


def language_codes(languages) -> tuple[str, ...]:
    """The codes of the model's languages; dialects are reached through their speakers, not listed."""
    return tuple(_LANGUAGE_CODES[name] for name in languages if name in _LANGUAGE_CODES)


def _named(voices, name: str) -> VoiceInfo | None:
    return next((v for v in voices if _fold(v.name) == _fold(name)), None)


def _fold(name: str) -> str:
    return name.casefold()


def _stamp(path: Path | None) -> tuple[int, int, int] | None:
    """What changes when a file is edited in place or replaced (editors often write a new file and rename it)."""
    try:
        stat = path.stat() if path is not None else None
    except OSError:  # deleted for a moment while an editor replaces it: keep the voices until it is back
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino) if stat else None
