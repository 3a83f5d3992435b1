"""Optional weight compression of a model directory: INT8 (per output channel) or INT4 (per group) weights via NNCF.

Compressed graphs keep their inputs and outputs; only the weight constants change (u8/u4 Constant -> Convert ->
Subtract zero point -> Multiply scale), which the CPU plugin runs as compressed FullyConnected kernels under either
inference hint (measured at 0.6B dims: f32 and the bf16 default are equally fast, so nothing else needs to change).
What each mode does to each graph, and why:

    graph            int8          int4
    talker           INT8 asym     INT4 sym, group `group_size` (NNCF keeps the codec_head at INT8)
    code_predictor   INT8 asym     INT4 sym, group `group_size` (the lm_heads, a Gather'ed table, stay INT8)
    text             INT8 asym     INT8 asym     (mostly a 151936-row embedding table, read one row per token)
    codec_decoder    unchanged     unchanged     (compute-bound: INT8 weights alone left it exactly as fast, with
                                                   twice the audio error of the bf16 default)

Beside the float codec decoder each mode also writes its INT8 twin (codec_int8.py: the convolutions' weights and
activations in INT8, calibrated on codes this model speaks), as the "auto" export does: the server measures it on
these weights at start-up and serves it only within engine.codec_precision's bound (0.6b random weights on 2 Zen 4
cores: 139 against bf16's 205 ms per audio second, error 2.6e-4 of full scale, within 1e-3).

INT8 moves the talker's logits by ~3.5% of their range at 0.6B dims (random weights; bf16 inference alone: ~1%).
INT4 moved them by ~40% there, which is why the export's weights "auto" (int4_choice.py) measures INT4 on the
user's checkpoint and keeps it only per graph where it passes. The manifest records the mode as chorus.json
"weights" (a float export says f32 or f16 there, or nothing).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import openvino as ov

WEIGHT_MODES = ("int8", "int4")
_GRAPHS = ("talker", "code_predictor", "text")


def compress_model_dir(model_dir: Path, mode: str, group_size: int = 128,
                       codec_twin: bool = True) -> dict[str, tuple[int, int]]:
    """Compress the weights of talker.xml, code_predictor.xml and text.xml in place, record `mode` in chorus.json, and
    write the codec decoder's INT8 twin (unless `codec_twin` is False: tests of the language models alone, which need
    not speak a calibration for it, ~5 s on the tiny model and minutes under an emulated CPU).

    Returns bytes on disk (.xml + .bin) before and after, per graph and for the whole directory ("total").
    Every graph is compressed into a staging file first, so a failure (an NNCF error, a full disk) leaves the
    directory as it was; only then are they renamed over the originals, and the manifest is rewritten last.
    """
    if mode not in WEIGHT_MODES:
        raise ValueError(f"mode must be one of {WEIGHT_MODES}, not {mode!r}")
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    model_dir = Path(model_dir)
    manifest_path = model_dir / "chorus.json"
    manifest = float_manifest(model_dir)
    nncf = import_nncf()

    total_before = dir_bytes(model_dir)
    before = {graph: graph_bytes(model_dir / f"{graph}.xml") for graph in _GRAPHS}
    staged = {graph: model_dir / f".{graph}.compressing.xml" for graph in _GRAPHS}
    try:
        for graph, staging in staged.items():
            compress_graph(model_dir / f"{graph}.xml", staging, nncf_options(nncf, graph, mode, group_size))
        commit_graphs(model_dir, staged)
    finally:
        remove_staged(staged.values())
    manifest["weights"] = mode
    write_atomic(manifest_path, json.dumps(manifest, indent=2) + "\n")
    if codec_twin:
        from wyoming_chorus.export.codec_int8 import write_spoken_int8_codec

        write_spoken_int8_codec(model_dir)
    sizes = {graph: (before[graph], graph_bytes(model_dir / f"{graph}.xml")) for graph in _GRAPHS}
    sizes["total"] = (total_before, dir_bytes(model_dir))
    return sizes


def float_manifest(model_dir: Path) -> dict:
    """chorus.json of `model_dir`, refused unless its weights are still float."""
    manifest = json.loads((model_dir / "chorus.json").read_text())
    if manifest.get("weights") in WEIGHT_MODES:
        raise ValueError(f"{model_dir} already has {manifest['weights']} weights; compress a float export")
    return manifest


def compress_graph(source: Path, staging: Path, options: dict) -> None:
    """nncf.compress_weights(source graph, **options), saved as `staging` (.xml + .bin)."""
    nncf = import_nncf()
    compressed = nncf.compress_weights(ov.Core().read_model(source), **options)
    # compress_to_fp16=False: the scales stay as NNCF made them (f16 already where the weights were f16).
    ov.save_model(compressed, str(staging), compress_to_fp16=False)


def commit_graphs(model_dir: Path, staged: Mapping[str, Path]) -> None:
    """Renames each staged graph over `model_dir`/GRAPH.xml/.bin once every one of them is written."""
    for graph, staging in staged.items():
        # .bin first, then .xml: the two names disagree only between two renames.
        os.replace(staging.with_suffix(".bin"), model_dir / f"{graph}.bin")
        os.replace(staging, model_dir / f"{graph}.xml")


def remove_staged(staged: Iterable[Path]) -> None:
    for staging in staged:
        staging.unlink(missing_ok=True)
        staging.with_suffix(".bin").unlink(missing_ok=True)


def import_nncf():
    # NNCF (and its scipy / scikit-learn) is only needed to export; a server never imports it.
    try:
        import nncf
    except ImportError as error:
        raise RuntimeError("weight compression needs NNCF: pip install 'wyoming-chorus[compress]'") from error
    return nncf


def nncf_options(nncf, graph: str, mode: str, group_size: int) -> dict:
    if mode == "int4" and graph != "text":
        # ratio=1: every eligible layer INT4; NNCF keeps embeddings and the last layer at INT8 (its backup mode),
        # which is where the logits' fidelity is decided.
        # Symmetric: on an AVX2 CPU (no VNNI) the asymmetric kernel's zero points cost ~30% of the talker's step
        # at batch 1 (93 -> 66 ms of CPU time, 0.6B dims), for no better logits (both ~30-50% off on random
        # weights).
        return {"mode": nncf.CompressWeightsMode.INT4_SYM, "group_size": group_size, "ratio": 1.0}
    return {"mode": nncf.CompressWeightsMode.INT8_ASYM}


def write_atomic(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def graph_bytes(xml: Path) -> int:
    return xml.stat().st_size + xml.with_suffix(".bin").stat().st_size


def dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())
