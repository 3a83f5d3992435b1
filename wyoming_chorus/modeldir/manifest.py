"""A model directory, read in one place: chorus.json as a typed Manifest, checked once, and the embedding tables
loaded once. Every component (runner, prompt builder, voices, cloning, codec) takes a ModelDir, not a path.

A directory written by another version of the builder (a different `format`), or something that is not a model
directory at all, is refused here with one line that says what to do, instead of a KeyError later.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wyoming_chorus.errors import SetupError

# The layout version that build.write_manifest writes and this reader understands.
FORMAT = 1
# The codec decoder's INT8 twin, beside codec_decoder.xml when the export made one (export/codec_int8.py); the server
# serves it only where its audio is within the bound (engine/codec_precision.py).
INT8_CODEC_XML = "codec_decoder_int8.xml"
# Frames per codec decoder block as the server streams them (engine/streaming_codec.py); the export calibrates the
# INT8 twin on blocks of the same shape.
CODEC_BLOCK_FRAMES = 4
# Sampling defaults, where a checkpoint's generation_config.json says nothing (the reference's own defaults).
GENERATION_DEFAULTS = {"temperature": 0.9, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.05,
                       "subtalker_temperature": 0.9, "subtalker_top_k": 50, "subtalker_top_p": 1.0,
                       "min_new_tokens": 2}


@dataclass(frozen=True)
class Manifest:
    name: str
    model_type: str                       # custom_voice, voice_design or base
    hidden_size: int
    num_code_groups: int                  # codes per frame (16): codebook 0 from the talker, the rest predicted
    codec_vocab_size: int                 # the talker's codec vocabulary: the codebook, then control ids
    codebook_size: int                    # codes per codebook (2048); ids from here up are control ids
    sample_rate: int
    samples_per_frame: int                # PCM samples one frame decodes to (1920 = 80 ms at 24 kHz)
    codec_ids: Mapping[str, int]
    text_ids: Mapping[str, int]
    languages: Mapping[str, int]
    speakers: Mapping[str, int]
    speaker_is_dialect: Mapping[str, Any]
    supports_instruct: bool
    generation: Mapping[str, Any]
    talker: Mapping[str, int]
    weights: str = "f32"                  # f32, f16, int8 or int4 (int4: at least one graph is INT4)
    random_weights: bool = False          # test and benchmark models: noise, not speech
    speaker_encoder: Mapping[str, int] | None = None   # Base models: speaker_encoder.xml
    codec_encoder: Mapping[str, int] | None = None     # Base models exported with codec_encoder.xml
    # An export with weights "auto": each checked graph's format and its INT4 and INT8 figures against the float
    # model (export/int4_choice.py), e.g. {"graphs": {"talker": {"weights": "int4", "int4": {"tvd": ...}}}}.
    weights_check: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: Path) -> Manifest:
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else None
            raise SetupError(f"{where}: a model directory of format {found!r}, not {FORMAT}: it was made by another "
                             "version of wyoming-chorus; export it again with `wyoming-chorus export`")
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        try:
            values = {key: data[key] for key in known if key in data}
            manifest = cls(**values, extra={k: v for k, v in data.items() if k not in known})
        except TypeError as error:  # a required key is missing
            raise SetupError(f"{where}/chorus.json is incomplete ({error}); export the model again") from None
        # The sampling settings with the defaults filled in, so no reader needs a default of its own.
        return dataclasses.replace(manifest, generation={**GENERATION_DEFAULTS, **manifest.generation})

    @property
    def eos_id(self) -> int:
        return int(self.codec_ids["eos"])

    @property
    def min_new_tokens(self) -> int:
        return int(self.generation["min_new_tokens"])

    @property
    def weights_label(self) -> str:
        """The weights in words: "int8", or per graph where an export with weights "auto" mixed them ("talker int4,
        code predictor int8"), since `weights` then says "int4" for a model whose predictor is INT8."""
        graphs = (self.weights_check or {}).get("graphs", {})
        formats = {graph.replace("_", " "): figures.get("weights") for graph, figures in graphs.items()}
        if len(set(formats.values())) < 2:
            return self.weights
        return ", ".join(f"{graph} {chosen}" for graph, chosen in formats.items())


class ModelDir:
    """One model directory: its manifest, its files, and its embedding tables (loaded on first use, once)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            data = json.loads((self.path / "chorus.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SetupError(f"{self.path} is not a model directory (no chorus.json); make one with "
                             "`wyoming-chorus export`") from None
        except (OSError, ValueError) as error:
            raise SetupError(f"{self.path}/chorus.json cannot be read: {error}") from None
        self.manifest = Manifest.from_json(data, self.path)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    @functools.cached_property
    def embeddings(self) -> dict[str, np.ndarray]:
        """codec_embedding [vocab, H] and cp_codec_embedding [15, codebook, H], f32: shared by the runner and the
        prompt builder (at 1.7B, ~250 MB that used to be loaded twice)."""
        from safetensors.numpy import load_file

        tables = load_file(str(self.path / "embeddings.safetensors"))
        return {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in tables.items()}

    def __repr__(self) -> str:
        return f"ModelDir({str(self.path)!r})"
