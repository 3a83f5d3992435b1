"""The engine benchmarks' measurements, shared by tools/bench_engine.py, bench_floor.py and bench.py: B requests
started and prefilled on a real runner, decode steps timed (talker alone, whole frame), the codec decoder's cost per
audio second, KV bytes per token. Requests run through an EngineCore that is never started: the benchmark steps it
(EngineCore.step), as the engine thread would."""
from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from wyoming_chorus.config import EngineSettings
from wyoming_chorus.engine.core import EngineCore
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.scheduler import ScheduledEntry
from wyoming_chorus.engine.sequence import SamplingParams, Sequence
from wyoming_chorus.engine.streaming_codec import StreamingCodecDecoder
from wyoming_chorus.modeldir.manifest import INT8_CODEC_XML, ModelDir


def start_batch(model: ModelDir, runner: PagedRunner, batch: int, context: int, frame_cap: int,
                inference_precision: str = "") -> tuple[EngineCore, list[Sequence]]:
    """An engine core over `runner` (never started: the benchmark steps it) holding `batch` requests whose prompts are
    `context` rows long, stepped until every one of them decodes. `inference_precision`: the runner's, for the
    core's codec decoder."""
    settings = EngineSettings(max_batch=batch, max_waiting=batch, step_token_budget=max(batch, 512),
                              inference_precision=inference_precision)
    core = EngineCore(model, settings, runner=runner)
    rng = np.random.default_rng(0)
    seqs = []
    for i in range(batch):
        prompt = rng.normal(0, 0.05, (context, runner.hidden_size)).astype(np.float32)
        pad = np.zeros(runner.hidden_size, np.float32)
        seq = Sequence(i, prompt, np.zeros((0, runner.hidden_size), np.float32), pad, frame_cap,
                       SamplingParams(seed=i))
        core.add(seq, None)  # no audio: the benchmark reads the frames off the sequences
        seqs.append(seq)
    while any(s.num_computed < s.num_rows - 1 or not s.frames for s in seqs):  # prefill, until all decode
        core.step()
    return core, seqs


def time_steps(run, steps: int) -> float:
    samples = []
    for _ in range(steps):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def bench_batch(model: ModelDir, runner: PagedRunner, batch: int, context: int, steps: int,
                inference_precision: str = "") -> dict:
    """Talker alone, a whole engine step (frame), and the host's part of that step: its wall time minus the
    runner's (messages, schedule, update, the stats snapshot). `inference_precision`: the runner's (the core's codec
    is compiled with it: under ONEDNN_MAX_CPU_ISA=AVX2 the default bf16 one does not compile)."""
    core, seqs = start_batch(model, runner, batch, context, frame_cap=steps * 2 + 8,
                             inference_precision=inference_precision)
    host: list[float] = []

    def talker_only():
        # A random model may say eos now and then: a finished request holds no blocks, so it is left out.
        runner.step([ScheduledEntry(s, s.num_computed - 1, 1, False) for s in seqs if not s.is_finished])

    def frame():
        started = time.perf_counter()
        report = core.step()
        host.append(time.perf_counter() - started - report.runner_seconds)

    talker_only()  # warm-up of this batch shape
    talker_ms = time_steps(talker_only, steps)
    frame()
    host.clear()
    frame_ms = time_steps(frame, steps)
    return {"batch": batch, "talker_ms": talker_ms, "frame_ms": frame_ms, "frames_per_s": batch * 1000 / frame_ms,
            "host_ms": statistics.median(host) * 1000}


def bench_codec(directory: Path, frames: int, precision: str) -> float:
    """Milliseconds of decoder compute per second of audio, streamed as the engine streams it (one decoder block
    at a time)."""
    int8 = precision == "int8"  # the INT8 graph (engine/codec_precision.py), its other ops in the default
    decoder = StreamingCodecDecoder(directory / (INT8_CODEC_XML if int8 else "codec_decoder.xml"),
                                    "" if int8 else precision)
    codes = np.random.default_rng(0).integers(0, 2048, (frames, 16), dtype=np.int64)
    decoder.push(decoder.new_stream(), codes[:4])  # warm-up

    def stream():
        state = decoder.new_stream()
        for start in range(0, frames, decoder.block_frames):
            decoder.push(state, codes[start:start + decoder.block_frames])

    return time_steps(stream, 3) / (frames * 0.08)


def kv_bytes_per_token(directory: Path, precision: str) -> float:
    """Raises SetupError where the CPU cannot keep such a cache (bf16 on an AVX2 CPU)."""
    runner = PagedRunner(ModelDir(directory), RunnerOptions(device="CPU", kv_precision=precision, num_blocks=4))
    return runner.bytes_per_block / runner.block_size
