"""Resolves a model setting to a model directory, building the built-in tiny model on first use.

The tiny model is built once per version of the code that builds it (the cache key hashes those source files), so an
upgrade never serves a stale directory. Concurrent first starts are safe: each process builds into its own
temporary directory and renames it into place; a process that loses the race discards its copy.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

BUILTIN_PREFIX = "builtin:"
BUILTIN_MODELS = ("tiny",)
# Every module whose code decides the bytes of the built directory.
_BUILDER_MODULES = ("build", "code_predictor", "codec_decoder", "codec_random", "decoder", "ops", "presets", "talker",
                    "text", "tokenizer")


def resolve_model(spec: str) -> Path:
    """"builtin:tiny" -> the cached tiny directory (built if missing); anything else -> that model directory."""
    if spec.startswith(BUILTIN_PREFIX):
        name = spec[len(BUILTIN_PREFIX):]
        if name not in BUILTIN_MODELS:
            raise ValueError(f"unknown built-in model {spec!r}; built in: "
                             + ", ".join(BUILTIN_PREFIX + known for known in BUILTIN_MODELS))
        return _cached_build(name)
    path = Path(spec).expanduser()
    if not (path / "chorus.json").is_file():
        raise ValueError(f"{path} is not a model directory (no chorus.json); make one with scripts/make_model.py")
    return path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "wyoming-chorus"


def builder_version() -> str:
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for module in _BUILDER_MODULES:
        digest.update(module.encode() + b"\0" + (here / f"{module}.py").read_bytes())
    return digest.hexdigest()[:16]


def _cached_build(name: str) -> Path:
    final = cache_root() / f"{name}-{builder_version()}"
    if (final / "chorus.json").is_file():
        return final
    # Imported here: resolving an existing directory should not pay for importing the graph builders.
    from service.model.presets import write_preset_model

    final.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        write_preset_model(name, building)
        building.rename(final)
    except OSError:
        # Another process renamed its build into place first (rename onto a non-empty directory fails).
        if not (final / "chorus.json").is_file():
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final
