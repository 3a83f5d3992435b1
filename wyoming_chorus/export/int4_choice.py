"""Weights "auto": INT4 for each language-model graph whose error, measured on this very checkpoint, is within the
threshold; INT8 for the others (and for text.xml, an embedding table).

INT4 runs one room ~1.5x faster than INT8 (0.6b, 2 Zen 4 cores), but how far it moves the codes depends on the
weights, which only the user has; so it is judged here, at export:
1. the float model speaks one household sentence per language (household.py), sampled as served: its inputs
   calibrate NNCF's data-aware INT4 compression (`INT4_METHODS`, default AWQ + scale estimation, see there);
2. it speaks another sentence per language (held out), and the INT4 and the INT8 talker and code predictor replay
   those inputs, compiled as the server will compile them (wyoming_chorus/lm_precision.py);
3. each graph keeps INT4 if its code agreement and TVD against the float model are within `Threshold`
   (weight_check.py says why there), INT8 otherwise; chorus.json "weights_check" records every figure;
4. the codec decoder gains an INT8 twin calibrated on step 1's codes (codec_int8.py), which the server measures
   against f32 at start-up and serves only within engine.codec_precision's bound.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.export import compress
from wyoming_chorus.export.codec_int8 import CALIBRATION_FRAMES, write_int8_codec
from wyoming_chorus.export.served_sampling import ServedSampling
from wyoming_chorus.export.utterances import calibration_inputs, replay, speak
from wyoming_chorus.export.weight_check import Distance, Threshold, predictor_distance, talker_distance
from wyoming_chorus.lm_precision import lm_precision
from wyoming_chorus.modeldir.manifest import ModelDir

CHECKED = ("talker", "code_predictor")
# NNCF's data-aware options per method name (tools/int4_methods.py compares them). AWQ + scale estimation, NNCF's
# recommended pair for INT4 LLMs, is the default: on the 0.6b preset (random weights, 3 held-out sentences, 2 Zen 4
# cores) it cut the INT4 TVD against the float model from 0.37 to 0.14 (talker) and 0.32 to 0.27 (code predictor)
# over the data-free compression, for 199 s of CPU instead of 16 and a peak RSS of 2.1 GB (below the float model's
# 3.3 GB while it speaks). GPTQ was not measured: its per-layer Hessians cost several times as much.
INT4_METHODS = {
    "data-free": {},
    "awq": {"awq": True},
    "scale-estimation": {"scale_estimation": True},
    "awq+scale-estimation": {"awq": True, "scale_estimation": True},
    "gptq": {"gptq": True},
}
DEFAULT_METHOD = "awq+scale-estimation"


@dataclass(frozen=True)
class CheckPlan:
    calibration_frames: int = CALIBRATION_FRAMES  # frames per calibration sentence (~2 s of audio)
    check_frames: int = 32         # frames per held-out sentence
    method: str = DEFAULT_METHOD
    group_size: int = 128
    languages: tuple[str, ...] | None = None   # None: every language of the model that household.py has


def compress_checked(model_dir: Path, threshold: Threshold | None = None, plan: CheckPlan | None = None,
                     report: Callable[[str], None] = lambda line: None,
                     on_stage: Callable[[str], None] = lambda label: None) -> dict:
    """Compress `model_dir` (a float export) in place, INT4 or INT8 per graph; returns chorus.json's
    "weights_check". `report(line)` receives one readable line per graph, `on_stage(label)` each step's name.
    Raises ValueError, RuntimeError."""
    threshold, plan = threshold or Threshold(), plan or CheckPlan()
    if plan.method not in INT4_METHODS:
        raise ValueError(f"unknown INT4 method {plan.method!r}; one of {', '.join(INT4_METHODS)}")
    model_dir = Path(model_dir)
    manifest = compress.float_manifest(model_dir)
    nncf = compress.import_nncf()
    model = ModelDir(model_dir)
    started = time.perf_counter()
    on_stage("the float model speaks the household sentences (calibration and held out)")
    calibration = speak(model, False, plan.calibration_frames, seed=0, languages=plan.languages)
    held_out = speak(model, True, plan.check_frames, seed=1, languages=plan.languages)
    staged = {(graph, mode): model_dir / f".{graph}.{mode}.xml" for graph in CHECKED for mode in ("int4", "int8")}
    staged[("text", "int8")] = model_dir / ".text.int8.xml"
    try:
        for (graph, mode), staging in staged.items():
            options = compress.nncf_options(nncf, graph, mode, plan.group_size)
            on_stage(f"{graph} to {mode.upper()}" + (f" ({plan.method})" if mode == "int4" else ""))
            if mode == "int4":
                samples = list(calibration_inputs(graph, calibration))
                # ADJUST: a layer narrower than the group (only in test-size models) gets a smaller group instead
                # of failing the export.
                advanced = nncf.AdvancedCompressionParameters(
                    group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST, min_adjusted_group_size=16)
                options.update(INT4_METHODS[plan.method], dataset=nncf.Dataset(samples), subset_size=len(samples),
                               advanced_parameters=advanced)
            compress.compress_graph(model_dir / f"{graph}.xml", staging, options)
        hint = lm_precision("", "int4", "CPU", cpu_facts()).hint
        served = {"INFERENCE_PRECISION_HINT": hint} if hint else {}
        sampling = ServedSampling.from_manifest(model.manifest.generation, model.manifest.codebook_size,
                                                model.manifest.eos_id)
        distances: dict[str, dict[str, Distance]] = {graph: {} for graph in CHECKED}
        on_stage(f"checking INT4 and INT8 against the float model on {len(held_out)} held-out sentences")
        for mode in ("int4", "int8"):
            talker, predictor = replay(staged[("talker", mode)], staged[("code_predictor", mode)], served, held_out)
            distances["talker"][mode] = talker_distance(sampling, held_out, talker)
            distances["code_predictor"][mode] = predictor_distance(sampling, held_out, predictor)
        chosen = {graph: "int4" if distances[graph]["int4"].within(threshold) else "int8" for graph in CHECKED}
        compress.commit_graphs(model_dir, {graph: staged[(graph, mode)]
                                           for graph, mode in [*chosen.items(), ("text", "int8")]})
        on_stage("the codec decoder's convolutions to INT8, calibrated on the calibration sentences' codes")
        write_int8_codec(model_dir, [spoken.codes for spoken in calibration])
    finally:
        compress.remove_staged(staged.values())
    check = {
        "method": plan.method, "group_size": plan.group_size, "served_precision": hint or "default",
        "threshold": {"max_tvd": threshold.max_tvd, "min_agreement": threshold.min_agreement},
        "graphs": {graph: {"weights": chosen[graph], **{mode: d.as_dict() for mode, d in distances[graph].items()}}
                   for graph in CHECKED},
        "seconds": round(time.perf_counter() - started, 1),
    }
    manifest.update(weights="int4" if "int4" in chosen.values() else "int8", weights_check=check)
    compress.write_atomic(model_dir / "chorus.json", json.dumps(manifest, indent=2) + "\n")
    for graph in CHECKED:
        report(verdict_line(graph, chosen[graph], distances[graph], threshold))
    return check


def verdict_line(graph: str, chosen: str, distances: dict[str, Distance], threshold: Threshold) -> str:
    """'checking INT4 on this checkpoint: talker: code agreement 97.1%, TVD 0.031 -> INT4 (threshold >= 90.0%,
    <= 0.050; INT8 99.0%, 0.012; 320 decisions)', or '-> INT8, INT4 missed the threshold (>= 90.0%, ...'."""
    int4, int8 = distances["int4"], distances["int8"]
    verdict = "INT4 (threshold " if chosen == "int4" else "INT8, INT4 missed the threshold ("
    return (f"checking INT4 on this checkpoint: {graph.replace('_', ' ')}: code agreement {int4.agreement:.1%}, "
            f"TVD {int4.tvd:.3f} -> {verdict}>= {threshold.min_agreement:.1%}, <= {threshold.max_tvd:.3f}; "
            f"INT8 {int8.agreement:.1%}, {int8.tvd:.3f}; {int4.decisions} decisions)")
