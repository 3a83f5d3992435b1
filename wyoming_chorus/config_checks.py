"""The checks of config.py's settings: each takes a raw YAML value and returns it normalised, or raises ValueError
with the reason (config.py turns it into one ConfigError naming the dotted key)."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

Check = Callable[[Any], Any]


class EntryError(ValueError):
    """A check's failure inside a mapping of named entries; `key` is the dotted path below the setting."""

    def __init__(self, key: str, reason: str):
        super().__init__(reason)
        self.key = key


def integer(minimum: int, *, optional: bool = False) -> Check:
    def check(value: Any) -> int | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, got {value!r}")
        if value < minimum:
            raise ValueError(f"must be at least {minimum}, got {value}")
        return value
    return check


def number(minimum: float) -> Check:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise ValueError(f"expected a number of at least {minimum}, got {value!r}")
        return float(value)
    return check


def seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"expected a positive number of seconds, got {value!r}")
    return float(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def text(*, optional: bool = False) -> Check:
    def check(value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"expected a non-empty string, got {value!r}")
        return value.strip()
    return check


def one_of(*choices: str, normalise: Callable[[str], str] = str.lower) -> Check:
    def check(value: Any) -> str:
        if isinstance(value, str) and normalise(value) in choices:
            return normalise(value)
        raise ValueError(f"expected one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return check


def device(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"AUTO|CPU|GPU(\.\d+)?", value.upper()):
        return value.upper()
    raise ValueError(f"expected AUTO, CPU, GPU or GPU.N, got {value!r}")


def uri(value: Any) -> str:
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


def port(value: Any) -> int:
    port = integer(0)(value)
    if port > 65535:
        raise ValueError(f"expected a port number up to 65535, got {port}")
    return port


def ip_address(value: Any) -> str | None:
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


def language(value: Any) -> str | None:
    """A language code as Wyoming clients send it ("en", "de_DE"); "auto" and null leave it to the model."""
    if value is None or value == "auto":
        return None
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})*", value):
        return value
    raise ValueError(f"expected a language code such as en or de_DE, or auto, got {value!r}")


def entries(value: Any, fields: Mapping[str, Check], required: tuple[str, ...], shorthand: str | None = None):
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
            raise EntryError(name, f"expected a mapping with {', '.join(fields)}, got {entry!r}")
        for key in entry:
            if key not in fields:
                raise EntryError(f"{name}.{key}", f"unknown key; expected one of {', '.join(fields)}")
        for key in required:
            if key not in entry:
                raise EntryError(name, f"{key} is missing")
        checked = {}
        for key, check in fields.items():
            try:
                checked[key] = check(entry.get(key))
            except ValueError as error:
                raise EntryError(f"{name}.{key}", str(error)) from None
        yield name.strip(), checked


def addresses(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"expected a list of addresses, got {value!r}")
    return tuple(value)
