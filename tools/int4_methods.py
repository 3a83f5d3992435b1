"""NNCF's data-aware INT4 methods side by side on one model directory: the time and peak memory each adds to an
export, and the code agreement and TVD it leaves (wyoming_chorus/export/int4_choice.py chooses one by default).

    python tools/int4_methods.py speak --model models/0.6b --cache /tmp/utterances.pkl
    python tools/int4_methods.py method awq+scale-estimation --model models/0.6b --cache /tmp/utterances.pkl

`speak` runs the float model over the household sentences once and keeps the utterances; each `method` run is its
own process, so that its peak RSS is its own. Figures from random weights measure cost, not audio quality.
"""
from __future__ import annotations

import argparse
import pickle
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wyoming_chorus.cpu import cpu_facts  # noqa: E402
from wyoming_chorus.export import compress  # noqa: E402
from wyoming_chorus.export.int4_choice import INT4_METHODS, CheckPlan  # noqa: E402
from wyoming_chorus.export.served_sampling import ServedSampling  # noqa: E402
from wyoming_chorus.export.utterances import calibration_inputs, replay, speak  # noqa: E402
from wyoming_chorus.export.weight_check import predictor_distance, talker_distance  # noqa: E402
from wyoming_chorus.lm_precision import lm_precision  # noqa: E402
from wyoming_chorus.modeldir.manifest import ModelDir  # noqa: E402


def cost(started: float) -> str:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (f"{time.perf_counter() - started:.0f} s wall, {usage.ru_utime + usage.ru_stime:.0f} s CPU, "
            f"peak RSS {usage.ru_maxrss / 1024:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["speak", "method"])
    parser.add_argument("method", nargs="?", choices=list(INT4_METHODS))
    parser.add_argument("--model", type=Path, required=True, help="a float model directory")
    parser.add_argument("--cache", type=Path, required=True, help="where `speak` keeps the utterances")
    parser.add_argument("--languages", help="comma-separated: speak only these (default: every one of the model)")
    args = parser.parse_args()
    plan = CheckPlan(languages=tuple(args.languages.split(",")) if args.languages else None)
    model, started = ModelDir(args.model), time.perf_counter()
    if args.phase == "speak":
        spoken = tuple(speak(model, held_out, frames, seed=int(held_out), languages=plan.languages)
                       for held_out, frames in ((False, plan.calibration_frames), (True, plan.check_frames)))
        args.cache.write_bytes(pickle.dumps(spoken))
        print(f"speak: {sum(len(u.codes) for part in spoken for u in part)} frames, {cost(started)}")
        return
    calibration, held_out = pickle.loads(args.cache.read_bytes())
    nncf = compress.import_nncf()
    with tempfile.TemporaryDirectory(dir=args.cache.parent) as scratch:
        staged = {graph: Path(scratch) / f"{graph}.xml" for graph in ("talker", "code_predictor")}
        for graph, staging in staged.items():
            options = compress.nncf_options(nncf, graph, "int4", plan.group_size)
            samples = list(calibration_inputs(graph, calibration))
            if INT4_METHODS[args.method]:
                options.update(INT4_METHODS[args.method], dataset=nncf.Dataset(samples), subset_size=len(samples))
            compress.compress_graph(model / f"{graph}.xml", staging, options)
            print(f"{args.method}: {graph} compressed, {cost(started)}", flush=True)
        hint = lm_precision("", "int4", "CPU", cpu_facts()).hint
        talker, predictor = replay(staged["talker"], staged["code_predictor"],
                                   {"INFERENCE_PRECISION_HINT": hint} if hint else {}, held_out)
    manifest = model.manifest
    sampling = ServedSampling.from_manifest(manifest.generation, manifest.codebook_size, manifest.eos_id)
    print(f"{args.method}: talker {talker_distance(sampling, held_out, talker)}, code predictor "
          f"{predictor_distance(sampling, held_out, predictor)}; {cost(started)}")


if __name__ == "__main__":
    main()
