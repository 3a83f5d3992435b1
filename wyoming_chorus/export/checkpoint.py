"""Reads the files of a Hugging Face checkpoint directory without torch: JSON configs and safetensors tensors.

Released Qwen3-TTS checkpoints store bfloat16 tensors, which numpy (and so safetensors' numpy loader) has no type
for; the format is simple enough to read directly: an 8-byte little-endian header length, a JSON header mapping
each tensor name to its dtype, shape and byte range, then the raw data. Tensors are memory-mapped and converted to
float32 one at a time, so a 4 GB checkpoint is never read whole before conversion.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np

_INDEX = "model.safetensors.index.json"
_SINGLE = "model.safetensors"
_FLOAT_TYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


class CheckpointError(ValueError):
    """A missing or malformed checkpoint file; the message names it and fits on one line."""


def read_json(path: Path) -> dict:
    if not path.is_file():
        raise CheckpointError(f"missing file {path}")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path} does not hold a JSON object")
    return value


class SafetensorsFile:
    """One .safetensors file: its tensor names, shapes and dtypes, and float32 copies on request."""

    def __init__(self, path: Path):
        self.path = path
        try:
            with path.open("rb") as stream:
                (length,) = struct.unpack("<Q", stream.read(8))
                header = json.loads(stream.read(length))
        except (OSError, struct.error, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CheckpointError(f"{path} is not a safetensors file: {error}") from None
        header.pop("__metadata__", None)
        self.entries: dict[str, dict] = header
        self._data_start = 8 + length
        self._map: np.memmap | None = None

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.entries[name]["shape"])

    def float32(self, name: str) -> np.ndarray:
        entry = self.entries[name]
        begin, end = entry["data_offsets"]
        if self._map is None:
            self._map = np.memmap(self.path, dtype=np.uint8, mode="r", offset=self._data_start)
        raw = self._map[begin:end]
        dtype = entry["dtype"]
        if dtype == "BF16":
            # bfloat16 is the upper half of a float32: widen the bits, then reinterpret.
            values = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
        elif dtype in _FLOAT_TYPES:
            values = raw.view(np.dtype(_FLOAT_TYPES[dtype]).newbyteorder("<")).astype(np.float32)
        else:
            raise CheckpointError(f"tensor {name!r} in {self.path} has dtype {dtype}; a float type was expected")
        return values.reshape(entry["shape"])


def weight_files(directory: Path) -> list[SafetensorsFile]:
    """model.safetensors, or every shard named by model.safetensors.index.json."""
    index = directory / _INDEX
    if index.is_file():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CheckpointError(f"{index} has no weight_map")
        shards = sorted(set(weight_map.values()))
    elif (directory / _SINGLE).is_file():
        shards = [_SINGLE]
    else:
        raise CheckpointError(f"missing file {directory / _SINGLE} (nor is there a {_INDEX})")
    missing = [shard for shard in shards if not (directory / shard).is_file()]
    if missing:
        raise CheckpointError(f"missing file {directory / missing[0]} (named by {index.name})")
    return [SafetensorsFile(directory / shard) for shard in shards]


def load_tensors(directory: Path, prefix: str, expected: dict[str, tuple[int, ...]] | None = None,
                 on_tensor: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """Every tensor whose name starts with `prefix`, as float32, keyed by its full name.

    `expected` (name -> shape) is checked before anything is converted, so a wrong or incomplete checkpoint fails
    at once, naming the first missing or misshapen tensor. `on_tensor(done, total)` reports progress.
    """
    files = weight_files(directory)
    located = {name: file for file in files for name in file.entries if name.startswith(prefix)}
    if not located:
        raise CheckpointError(f"{directory} has no tensors named {prefix}*")
    for name, shape in (expected or {}).items():
        if name not in located:
            raise CheckpointError(f"{directory} is missing tensor {name!r}")
        found = located[name].shape(name)
        if found != tuple(shape):
            raise CheckpointError(f"tensor {name!r} in {located[name].path} has shape {list(found)}, "
                                  f"the config implies {list(shape)}")
    tensors = {}
    for done, (name, file) in enumerate(sorted(located.items()), 1):
        tensors[name] = file.float32(name)
        if on_tensor is not None:
            on_tensor(done, len(located))
    return tensors
