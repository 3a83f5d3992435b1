"""tools/bench.py in this process, after the servers are gone: step time by stage on a real runner, the KV tokens each
reply of the run needs (from the server's own sentence splitter and RequestBuilder), codec cost, KV bytes per
token."""
from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path

from chorus_tools.bench.plan import BENCH_SEED, Plan, log
from chorus_tools.models import served_codec


def stage_timings(model, runner, batch: int, context: int, steps: int, inference_precision: str = "") -> dict:
    """Medians over `steps` real engine steps (EngineCore.step) of `batch` decoding requests: talker alone (a runner
    step that re-runs each request's last row and emits nothing), the runner's whole frame, and the host's part of a
    step: its wall time minus the runner's (messages, schedule(), update(), the stats snapshot)."""
    from chorus_tools.engine_bench import start_batch
    from wyoming_chorus.engine.scheduler import ScheduledEntry

    core, seqs = start_batch(model, runner, batch, context, frame_cap=2 * steps + 8,
                             inference_precision=inference_precision)

    def talker_only() -> float:
        # A random model may say eos now and then: a finished request holds no blocks, so it is left out.
        started = time.perf_counter()
        runner.step([ScheduledEntry(s, s.num_computed - 1, 1, False) for s in seqs if not s.is_finished])
        return time.perf_counter() - started

    def frame() -> dict:
        started = time.perf_counter()
        report = core.step()
        wall = time.perf_counter() - started
        return {"wall": wall, "runner": report.runner_seconds, "update": report.seconds - report.runner_seconds,
                "batch": report.batch}

    talker_only()  # warm-up of this batch shape
    talker = statistics.median(talker_only() for _ in range(steps))
    frame()
    frames = [frame() for _ in range(steps)]
    ran = statistics.median(f["batch"] for f in frames)

    def med(key: str) -> float:
        return statistics.median(f[key] for f in frames) * 1000

    host = statistics.median((f["wall"] - f["runner"]) for f in frames) * 1000
    return {"batch": batch, "batch_ran": ran, "talker_ms": talker * 1000, "runner_frame_ms": med("runner"),
            "code_predictor_sampling_ms": med("runner") - talker * 1000, "step_ms": med("wall"), "host_ms": host,
            "update_ms": med("update"), "schedule_ms": host - med("update"),
            "host_share": host / med("wall"), "frames_per_s": ran * 1000 / med("wall")}


def kv_tokens(directory: Path, texts: list[tuple[str, str]]) -> list[dict]:
    """The KV rows each reply's sentences need at their last frame (prompt rows + frames - 1), built by the server's own
    sentence splitter and RequestBuilder with the benchmark's settings."""
    from wyoming_chorus.config import EngineSettings
    from wyoming_chorus.frontend.requests import RequestBuilder
    from wyoming_chorus.modeldir.manifest import ModelDir
    from wyoming_chorus.speech.sentences import StreamingSentences

    builder = RequestBuilder(ModelDir(directory), EngineSettings(benchmark_frames_per_word=5, seed=BENCH_SEED))
    replies, seen = [], set()
    for kind, text in texts:
        if text in seen:
            continue
        seen.add(text)
        splitter = StreamingSentences()
        sentences = splitter.add(text)
        if (rest := splitter.finish()) is not None:
            sentences.append(rest)
        seqs = [builder.build(s) for s in sentences]
        replies.append({"kind": kind, "sentences": [{"prompt_rows": q.num_prompt_rows, "frames": q.frame_cap,
                                                     "tokens": q.max_rows} for q in seqs]})
    return replies


def engine_phase(directory: Path, plan: Plan, texts: list[tuple[str, str]], isa_flags: set[str]) -> dict:
    from chorus_tools.engine_bench import bench_codec, kv_bytes_per_token
    from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
    from wyoming_chorus.errors import SetupError
    from wyoming_chorus.modeldir.manifest import ModelDir

    out: dict = {"skipped": {}}
    log("engine level: token counts of every reply in the run")
    out["replies"] = kv_tokens(directory, texts)
    gc.collect()
    model = ModelDir(directory)
    # The talker and code predictor at the precision the servers chose (lm_precision.py); the codec as given.
    from wyoming_chorus.cpu import cpu_facts
    from wyoming_chorus.lm_precision import lm_precision

    lm_hint = lm_precision(plan.inference_precision, model.manifest.weights, "CPU", cpu_facts()).hint
    runner = PagedRunner(model, RunnerOptions(device="CPU", kv_precision="u8", kv_cache_bytes=512 << 20,
                                              inference_precision=lm_hint))
    out["block_size"] = runner.block_size
    out["kv_bytes_per_token"] = {"u8": runner.bytes_per_block / runner.block_size}
    out["stages"] = []
    for batch in plan.engine_batches:
        log(f"engine level: stage timings at batch {batch} (u8 KV)")
        try:
            out["stages"].append(stage_timings(model, runner, batch, plan.context, plan.engine_steps,
                                                plan.inference_precision))
        except Exception as error:  # noqa: BLE001  (one batch size that fails leaves the others)
            out["skipped"][f"stages at batch {batch}"] = f"{type(error).__name__}: {error}"
            log(f"  failed: {out['skipped'][f'stages at batch {batch}']}")
    del runner
    gc.collect()
    log("engine level: batch 8 with f16 KV")
    try:
        runner = PagedRunner(model, RunnerOptions(device="CPU", kv_precision="f16", kv_cache_bytes=512 << 20,
                                                  inference_precision=lm_hint))
        out["kv_bytes_per_token"]["f16"] = runner.bytes_per_block / runner.block_size
        out["f16_batch8"] = stage_timings(model, runner, 8, plan.context, plan.engine_steps,
                                          plan.inference_precision)
        del runner
    except Exception as error:  # noqa: BLE001  (SetupError: a CPU without f16 KV; anything else: noted, not fatal)
        out["skipped"]["f16"] = f"{type(error).__name__}: {error}"
    gc.collect()
    if "avx512_bf16" in isa_flags or "amx_bf16" in isa_flags:
        try:
            out["kv_bytes_per_token"]["bf16"] = kv_bytes_per_token(directory, "bf16")
        except SetupError as error:
            out["skipped"]["bf16"] = str(error)
    else:
        out["skipped"]["bf16"] = "no bf16 on this CPU"
    log("engine level: codec decoder, as the server serves it (engine.codec_precision: auto)")
    served = served_codec(directory, plan.inference_precision or "").precision
    out["codec_precision"] = served
    out["codec_ms_per_audio_s"] = bench_codec(directory, 28 if plan.engine_steps <= 4 else 52, served)
    return out
