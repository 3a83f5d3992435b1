"""Resolves a model setting to a model directory: a built-in model (built on first use), a hub model (downloaded and
exported on first use, wyoming_chorus/export/hub.py) or a model directory on disk.

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

from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.hub import HUB_MODELS, hub_model, hub_repo

BUILTIN_PREFIX = "builtin:"
# Random models for tests and for trying the server offline: the tiny preset as a CustomVoice model (its three
# speakers), a Base model (the voice studio's cloning) and a VoiceDesign model (its designing).
BUILTIN_MODELS = {"tiny": "custom_voice", "tiny-base": "base", "tiny-design": "voice_design"}
# Every module whose code decides the bytes of the built directory.
_BUILDER_SOURCES = ("graphs/*.py", "export/build.py", "export/codec_random.py", "export/presets.py",
                    "export/tokenizer.py", "modeldir/manifest.py")


def resolve_model(spec: str, data_dir: Path | str | None = None) -> Path:
    """The model directory `spec` names: "builtin:NAME" (built if missing); else an existing path, which must be a
    model directory; else a hub model, by short name ("0.6b-custom") or OWNER/NAME, downloaded and exported into
    `data_dir` (default: hub.data_root()) on first use. Raises SetupError."""
    if spec.startswith(BUILTIN_PREFIX):
        name = spec[len(BUILTIN_PREFIX):]
        if name not in BUILTIN_MODELS:
            raise SetupError(f"unknown built-in model {spec!r}; built in: "
                             + ", ".join(BUILTIN_PREFIX + known for known in BUILTIN_MODELS))
        return _cached_build(name)
    path = Path(spec).expanduser()
    repo = None if path.exists() else hub_repo(spec)
    if repo is not None:
        return hub_model(repo, data_dir)
    if not (path / "chorus.json").is_file():
        problem = "is not a model directory (no chorus.json)" if path.exists() else "does not exist"
        raise SetupError(f"{path} {problem}; make a model directory from a Qwen3-TTS checkpoint with `wyoming-chorus "
                         f"export CHECKPOINT -o MODEL_DIR`, or name a hub model ({', '.join(HUB_MODELS)} or "
                         f"OWNER/NAME) to download one")
    return path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "wyoming-chorus"


def builder_version() -> str:
    digest = hashlib.sha256()
    service = Path(__file__).parent.parent
    for pattern in _BUILDER_SOURCES:
        for source in sorted(service.glob(pattern)):
            digest.update(source.relative_to(service).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def _cached_build(name: str) -> Path:
    final = cache_root() / f"{name}-{builder_version()}"
    if (final / "chorus.json").is_file():
        return final
    # Imported here: resolving an existing directory should not pay for importing the graph builders.
    from wyoming_chorus.export.presets import write_preset_model

    final.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        write_preset_model("tiny", building, model_type=BUILTIN_MODELS[name])
        building.rename(final)
    except OSError:
        # Another process renamed its build into place first (rename onto a non-empty directory fails).
        if not (final / "chorus.json").is_file():
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final
