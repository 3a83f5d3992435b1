"""Typed, validated settings read from config.yaml (see that file for what each key means).

Every field declares its own check, which validates the raw YAML value and returns it normalised; a failed check
becomes one ConfigError naming the dotted key ("engine.kv_precision: ..."). The dataclass defaults equal the
embedded config.yaml (a test keeps them in step), so a --config file may leave keys out.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from wyoming_chorus import config_checks as check
from wyoming_chorus.config_checks import Check


class ConfigError(Exception):
    """An invalid configuration; the message names the key and fits on one line."""


def _setting(default: Any, validate: Check) -> Any:
    return field(default=default, metadata={"check": validate})


@dataclass(frozen=True)
class DesignVoice:
    name: str
    instruct: str                   # the description that makes the voice
    language: str | None = None     # code; None: voices.language
    speaker: str | None = None      # CustomVoice models only: the speaker the instruction styles


@dataclass(frozen=True)
class CloneVoice:
    name: str
    wav: Path                       # reference clip; relative to the config file
    text: str | None = None         # what the clip says: in-context cloning; None: its speaker embedding only
    language: str | None = None


def _design_voices(value: Any) -> tuple[DesignVoice, ...]:
    fields = {"instruct": check.text(), "language": check.language, "speaker": check.text(optional=True)}
    return tuple(DesignVoice(name, **entry) for name, entry in check.entries(value, fields, ("instruct",), "instruct"))


def _clone_voices(value: Any) -> tuple[CloneVoice, ...]:
    fields = {"wav": check.text(), "text": check.text(optional=True), "language": check.language}
    return tuple(CloneVoice(name, wav=Path(entry.pop("wav")).expanduser(), **entry)
                 for name, entry in check.entries(value, fields, ("wav",)))


# ---- settings ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerSettings:
    uri: str = _setting("tcp://0.0.0.0:10200", check.uri)
    shutdown_timeout: float = _setting(10.0, check.seconds)
    log_level: str = _setting("INFO", check.one_of("DEBUG", "INFO", "WARNING", "ERROR", normalise=str.upper))
    max_connections: int = _setting(64, check.integer(1))
    max_connections_per_peer: int = _setting(32, check.integer(1))
    idle_timeout: float = _setting(300.0, check.seconds)
    stream_pause_timeout: float = _setting(300.0, check.seconds)
    stream_max_seconds: float = _setting(300.0, check.seconds)
    event_timeout: float = _setting(10.0, check.seconds)
    max_event_bytes: int = _setting(1 << 20, check.integer(1024))
    max_queued_replies: int = _setting(8, check.integer(1))
    max_buffered_audio_seconds: float = _setting(30.0, check.seconds)
    streaming_input: bool = _setting(True, check.boolean)


@dataclass(frozen=True)
class ZeroconfSettings:
    enabled: bool = _setting(True, check.boolean)
    name: str | None = _setting(None, check.text(optional=True))
    address: str | None = _setting(None, check.ip_address)
    interfaces: tuple[str, ...] = _setting((), check.addresses)


@dataclass(frozen=True)
class EngineSettings:
    model: str = _setting("builtin:tiny", check.text())
    data_dir: str | None = _setting(None, check.text(optional=True))  # None: hub.data_root()
    device: str = _setting("AUTO", check.device)
    kv_precision: str = _setting("u8", check.one_of("u8", "f16", "bf16", "f32"))
    inference_precision: str = _setting("", check.one_of("", "f32", "bf16", "f16"))
    codec_precision: str = _setting("auto", check.one_of("auto", "", "f32", "bf16", "f16"))
    native_matmul: bool = _setting(True, check.boolean)
    kv_cache_mb: int = _setting(256, check.integer(1))
    max_cache_blocks: int = _setting(0, check.integer(0))
    max_batch: int = _setting(16, check.integer(1))
    max_waiting: int = _setting(64, check.integer(0))
    max_text_length: int = _setting(4000, check.integer(1))
    max_frames: int = _setting(1500, check.integer(1))
    random_model_frames: int = _setting(50, check.integer(1))
    benchmark_frames_per_word: float = _setting(0.0, check.number(0.0))
    step_token_budget: int = _setting(256, check.integer(1))
    policy: str = _setting("continuous", check.one_of("continuous", "static"))
    samples_per_chunk: int = _setting(1920, check.integer(1))
    seed: int | None = _setting(None, check.integer(0, optional=True))
    greedy: bool = _setting(False, check.boolean)
    share_identical: bool = _setting(True, check.boolean)
    prefix_caching: bool = _setting(True, check.boolean)
    prompt_layout: str = _setting("streaming", check.one_of("streaming", "reference"))


@dataclass(frozen=True)
class SchedulerSettings:
    policy: str = _setting("playback", check.one_of("playback", "fcfs"))
    head_start_seconds: float = _setting(0.0, check.number(0.0))  # 0: the client plays from the first chunk
    min_slack_seconds: float = _setting(1.0, check.seconds)
    max_slack_seconds: float = _setting(4.0, check.seconds)
    max_first_audio_seconds: float = _setting(1.5, check.number(0.0))  # 0: no hold before a first chunk


@dataclass(frozen=True)
class MetricsSettings:
    enabled: bool = _setting(True, check.boolean)
    address: str = _setting("0.0.0.0", check.text())
    port: int = _setting(9700, check.port)


@dataclass(frozen=True)
class VoicesSettings:
    default: str | None = _setting(None, check.text(optional=True))
    language: str | None = _setting(None, check.language)
    design: tuple[DesignVoice, ...] = _setting((), _design_voices)
    clone: tuple[CloneVoice, ...] = _setting((), _clone_voices)
    # Not a key: the file this section was read from. Relative clip paths start there, and the engine re-reads the
    # section when the file changes. None when the settings were made in code.
    source: Path | None = field(default=None, compare=False, metadata={"from_file": True})
    # Not a key: the voice studio's own voices file (studio.voices_file, while the studio is enabled), a voices
    # section of its own that the engine adds to this one and re-reads as it does this one's file. None: no studio.
    studio_file: Path | None = field(default=None, compare=False, metadata={"from_file": True})


@dataclass(frozen=True)
class StudioSettings:
    enabled: bool = _setting(False, check.boolean)
    address: str = _setting("127.0.0.1", check.text())
    port: int = _setting(9701, check.port)
    voices_file: str | None = _setting(None, check.text(optional=True))  # None: DATA_DIR/studio/voices.yaml
    max_upload_mb: float = _setting(16.0, check.number(0.1))
    allowed_hosts: tuple[str, ...] = _setting((), check.addresses)
    ingress_proxy: str | None = _setting(None, check.ip_address)


@dataclass(frozen=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    zeroconf: ZeroconfSettings = field(default_factory=ZeroconfSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    voices: VoicesSettings = field(default_factory=VoicesSettings)
    studio: StudioSettings = field(default_factory=StudioSettings)


# ---- loading ----------------------------------------------------------------------------------------------------

def default_config_path() -> Path:
    """The embedded config.yaml: beside this module in an installed wheel, at the repository root in a checkout."""
    packaged = Path(__file__).with_name("config.yaml")
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parent.parent / "config.yaml"


def load_settings(path: Path | None = None, overrides: Mapping[str, Any] | None = None) -> Settings:
    """Read `path` (default: the embedded config.yaml), apply dotted-key overrides ("engine.model"), validate."""
    path = path or default_config_path()
    raw = _read(path)
    for key, value in (overrides or {}).items():
        section, name = key.split(".", 1)
        raw.setdefault(section, {})
        if isinstance(raw[section], dict):
            raw[section][name] = value
    settings = _build(Settings, raw, "")
    return dataclasses.replace(settings, voices=dataclasses.replace(settings.voices, source=path))


def load_voices(path: Path) -> VoicesSettings:
    """Only the voices section of `path`: what the engine re-reads when the file changes."""
    return parse_voices(_read(path).get("voices"), path)


def parse_voices(raw: Any, source: Path) -> VoicesSettings:
    """A voices section given as its YAML mapping (None: empty), as if read from `source`."""
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"voices: expected a mapping of settings, got {raw!r}")
    return dataclasses.replace(_build(VoicesSettings, raw or {}, "voices."), source=source)


def _read(path: Path) -> dict:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    return raw


def _build(cls: type, raw: dict, prefix: str) -> Any:
    known = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("from_file")}
    for key in raw:
        if key not in known:
            raise ConfigError(f"{prefix}{key}: unknown key; expected one of {', '.join(known)}")
    values = {}
    for name, spec in known.items():
        if name not in raw:
            continue
        key = f"{prefix}{name}"
        if "check" not in spec.metadata:  # a section
            if not isinstance(raw[name], dict):
                raise ConfigError(f"{key}: expected a mapping of settings, got {raw[name]!r}")
            values[name] = _build(cast(type, spec.default_factory), raw[name], f"{key}.")  # a section: its class
            continue
        try:
            values[name] = spec.metadata["check"](raw[name])
        except check.EntryError as error:
            raise ConfigError(f"{key}.{error.key}: {error}") from None
        except ValueError as error:
            raise ConfigError(f"{key}: {error}") from None
    return cls(**values)
