"""Typed, validated settings read from config.yaml (see that file for what each key means).

Every field declares its own check, which validates the raw YAML value and returns it normalised; a failed check
becomes one ConfigError naming the dotted key ("engine.kv_precision: ..."). The dataclass defaults equal the
embedded config.yaml (a test keeps them in step), so a --config file may leave keys out.
"""
from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

import yaml


class ConfigError(Exception):
    """An invalid configuration; the message names the key and fits on one line."""


class _EntryError(ValueError):
    """A check's failure inside a mapping of named entries; `key` is the dotted path below the setting."""

    def __init__(self, key: str, reason: str):
        super().__init__(reason)
        self.key = key


Check = Callable[[Any], Any]


def _setting(default: Any, check: Check) -> Any:
    return field(default=default, metadata={"check": check})


# ---- checks: take a raw YAML value, return it normalised or raise ValueError with the reason -------------------

def _integer(minimum: int, *, optional: bool = False) -> Check:
    def check(value: Any) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        if value < minimum:
            raise ValueError(f"must be at least {minimum}, got {value}")
        return value
    return check


def _number(minimum: float) -> Check:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise ValueError(f"expected a number of at least {minimum}, got {value!r}")
        return float(value)
    return check


def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"expected a positive number of seconds, got {value!r}")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _text(*, optional: bool = False) -> Check:
    def check(value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a non-empty string, got {value!r}")
        return value.strip()
    return check


def _one_of(*choices: str, normalise: Callable[[str], str] = str.lower) -> Check:
    def check(value: Any) -> str:
        if isinstance(value, str) and normalise(value) in choices:
            return normalise(value)
        raise ValueError(f"expected one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return check


def _device(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"AUTO|CPU|GPU(\.\d+)?", value.upper()):
        return value.upper()
    raise ValueError(f"expected AUTO, CPU, GPU or GPU.N, got {value!r}")


def _uri(value: Any) -> str:
    """tcp:// or unix://; wyoming's stdio server cannot run beside anything else, so it is not offered."""
    parsed = urlparse(value) if isinstance(value, str) else None
    try:
        port = parsed.port if parsed else None
    except ValueError:  # a port that is not a number or out of range
        port = None
    if parsed and parsed.scheme == "tcp" and parsed.hostname and port:
        return value
    if parsed and parsed.scheme == "unix" and parsed.path:
        return value
    raise ValueError(f"expected tcp://HOST:PORT or unix://PATH, got {value!r}")


def _port(value: Any) -> int:
    port = _integer(0)(value)
    if port > 65535:
        raise ValueError(f"expected a port number up to 65535, got {port}")
    return port


def _ip_address(value: Any) -> str | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        address = ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"expected an IPv4 or IPv6 address, got {value!r}") from None
    if address.is_unspecified:
        raise ValueError(f"{value} is the wildcard address, which clients cannot connect to")
    return str(address)


def _language(value: Any) -> str | None:
    """A language code as Wyoming clients send it ("en", "de_DE"); "auto" and null leave it to the model."""
    if value is None or value == "auto":
        return None
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*", value):
        return value
    raise ValueError(f"expected a language code such as en or de_DE, or auto, got {value!r}")


def _entries(value: Any, fields: Mapping[str, Check], required: tuple[str, ...], shorthand: str | None = None):
    """A mapping of name -> {field: value}; yields (name, checked fields). A bare string stands for `shorthand`.
    An empty key (all entries commented out) is no entries."""
    value = {} if value is None else value
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of names to entries, got {value!r}")
    for name, entry in value.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"expected names as non-empty strings, got {name!r}")
        if isinstance(entry, str) and shorthand:
            entry = {shorthand: entry}
        if not isinstance(entry, dict):
            raise _EntryError(name, f"expected a mapping with {', '.join(fields)}, got {entry!r}")
        for key in entry:
            if key not in fields:
                raise _EntryError(f"{name}.{key}", f"unknown key; expected one of {', '.join(fields)}")
        for key in required:
            if key not in entry:
                raise _EntryError(name, f"{key} is missing")
        checked = {}
        for key, check in fields.items():
            try:
                checked[key] = check(entry.get(key))
            except ValueError as error:
                raise _EntryError(f"{name}.{key}", str(error)) from None
        yield name.strip(), checked


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
    fields = {"instruct": _text(), "language": _language, "speaker": _text(optional=True)}
    return tuple(DesignVoice(name, **entry) for name, entry in _entries(value, fields, ("instruct",), "instruct"))


def _clone_voices(value: Any) -> tuple[CloneVoice, ...]:
    fields = {"wav": _text(), "text": _text(optional=True), "language": _language}
    return tuple(CloneVoice(name, wav=Path(entry.pop("wav")).expanduser(), **entry)
                 for name, entry in _entries(value, fields, ("wav",)))


def _addresses(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"expected a list of addresses, got {value!r}")
    return tuple(value)


# ---- settings ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerSettings:
    uri: str = _setting("tcp://0.0.0.0:10200", _uri)
    shutdown_timeout: float = _setting(10.0, _seconds)
    log_level: str = _setting("INFO", _one_of("DEBUG", "INFO", "WARNING", "ERROR", normalise=str.upper))
    max_connections: int = _setting(64, _integer(1))
    max_connections_per_peer: int = _setting(32, _integer(1))
    idle_timeout: float = _setting(300.0, _seconds)
    stream_pause_timeout: float = _setting(20.0, _seconds)
    stream_max_seconds: float = _setting(120.0, _seconds)
    event_timeout: float = _setting(10.0, _seconds)
    max_event_bytes: int = _setting(1 << 20, _integer(1024))
    max_queued_replies: int = _setting(8, _integer(1))
    max_buffered_audio_seconds: float = _setting(30.0, _seconds)
    streaming_input: bool = _setting(True, _boolean)


@dataclass(frozen=True)
class ZeroconfSettings:
    enabled: bool = _setting(True, _boolean)
    name: str | None = _setting(None, _text(optional=True))
    address: str | None = _setting(None, _ip_address)
    interfaces: tuple[str, ...] = _setting((), _addresses)


@dataclass(frozen=True)
class EngineSettings:
    model: str = _setting("builtin:tiny", _text())
    data_dir: str | None = _setting(None, _text(optional=True))  # None: hub.data_root()
    device: str = _setting("AUTO", _device)
    kv_precision: str = _setting("u8", _one_of("u8", "f16", "bf16", "f32"))
    inference_precision: str = _setting("", _one_of("", "f32", "bf16", "f16"))
    kv_cache_mb: int = _setting(256, _integer(1))
    max_cache_blocks: int = _setting(0, _integer(0))
    max_batch: int = _setting(16, _integer(1))
    max_waiting: int = _setting(64, _integer(0))
    max_text_length: int = _setting(4000, _integer(1))
    max_frames: int = _setting(1500, _integer(1))
    random_model_frames: int = _setting(50, _integer(1))
    benchmark_frames_per_word: float = _setting(0.0, _number(0.0))
    step_token_budget: int = _setting(256, _integer(1))
    policy: str = _setting("continuous", _one_of("continuous", "static"))
    samples_per_chunk: int = _setting(1920, _integer(1))
    seed: int | None = _setting(None, _integer(0, optional=True))
    greedy: bool = _setting(False, _boolean)
    share_identical: bool = _setting(True, _boolean)
    prefix_caching: bool = _setting(True, _boolean)


@dataclass(frozen=True)
class MetricsSettings:
    enabled: bool = _setting(True, _boolean)
    address: str = _setting("0.0.0.0", _text())
    port: int = _setting(9700, _port)


@dataclass(frozen=True)
class VoicesSettings:
    default: str | None = _setting(None, _text(optional=True))
    language: str | None = _setting(None, _language)
    design: tuple[DesignVoice, ...] = _setting((), _design_voices)
    clone: tuple[CloneVoice, ...] = _setting((), _clone_voices)
    # Not a key: the file this section was read from. Relative clip paths start there, and the engine re-reads the
    # section when the file changes. None when the settings were made in code.
    source: Path | None = field(default=None, compare=False, metadata={"from_file": True})


@dataclass(frozen=True)
class Settings:
    server: ServerSettings = field(default_factory=ServerSettings)
    zeroconf: ZeroconfSettings = field(default_factory=ZeroconfSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    voices: VoicesSettings = field(default_factory=VoicesSettings)


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
    raw = _read(path).get("voices")
    if raw is not None and not isinstance(raw, dict):
        raise ConfigError(f"voices: expected a mapping of settings, got {raw!r}")
    return dataclasses.replace(_build(VoicesSettings, raw or {}, "voices."), source=path)


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
        except _EntryError as error:
            raise ConfigError(f"{key}.{error.key}: {error}") from None
        except ValueError as error:
            raise ConfigError(f"{key}: {error}") from None
    return cls(**values)
