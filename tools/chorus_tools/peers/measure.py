"""tools/bench_peers.py's measurements of each peer, every request the same text and speaker, greedy, ended after
exactly --frames frames: one stream, N requests on N threads, and qwen-tts's own batched generate."""
from __future__ import annotations

import threading
import time
from importlib import metadata

from chorus_tools.peers.checkpoint import import_reference

SECONDS_PER_FRAME = 0.08
SAMPLES_PER_FRAME = 1920
TEXT = "Turn off the kitchen lights and lock the front door, please."
SPEAKER = "ryan"
LANGUAGE = "auto"


def timed_threads(count: int, request) -> tuple[float, list]:
    """Wall seconds for `count` threads each running request(i) started together, and their results in order."""
    results: list = [None] * count
    errors: list[BaseException] = []
    start = threading.Barrier(count + 1)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = request(i)
        except BaseException as error:  # re-raised in the caller: a failed thread must not pass as a fast one
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if errors:
        raise errors[0]
    return wall, results


def one_stream_figures(wall: float, frames: int, first_audio: float | None) -> dict:
    audio = frames * SECONDS_PER_FRAME
    return {"frames": frames, "wall_s": round(wall, 3), "frames_per_s": round(frames / wall, 2),
            "rtf": round(wall / audio, 3), "first_audio_s": None if first_audio is None else round(first_audio, 3)}


def aggregate_figures(wall: float, frames: list[int], how: str, same: bool | None = None) -> dict:
    figures = {"aggregate_frames_per_s": round(sum(frames) / wall, 2), "wall_s": round(wall, 3),
               "frames": sum(frames), "how": how}
    if same is not None:
        figures["same_audio"] = same
    return figures


def frames_of(pcm) -> int:
    return len(pcm) // SAMPLES_PER_FRAME


def bench_qwen_tts(args) -> dict:
    reference = import_reference()  # also sets torch to one thread, for the tiny test models: reset below
    import numpy as np
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()  # "pad_token_id set to eos" and unused-flag notices, per call
    result = {"version": metadata.version("qwen-tts"),
              "runtime": f"torch {torch.__version__}, transformers {transformers.__version__}, float32"}
    load = time.perf_counter()
    model = reference.Qwen3TTSModel.from_pretrained(str(args.checkpoint), dtype=torch.float32)
    result["load_s"] = round(time.perf_counter() - load, 2)
    result["attention"] = model.model.config._attn_implementation

    def generate(texts, frames: int):
        # With no end-of-speech, generate stops at max_new_tokens and returns one frame fewer (the last
        # codebook-0 never gets its sub-codes): +1 gives exactly `frames`.
        wavs, _ = model.generate_custom_voice(texts, speaker=SPEAKER, language=LANGUAGE, do_sample=False,
                                              subtalker_dosample=False, max_new_tokens=frames + 1)
        return [np.asarray(wav, np.float32) for wav in wavs]

    generate(TEXT, min(args.frames, 4))  # warm-up: first-call allocations and kernel selection
    began = time.perf_counter()
    single = generate(TEXT, args.frames)[0]
    result["one_stream"] = one_stream_figures(time.perf_counter() - began, frames_of(single), None)
    result["streams"] = False
    result["concurrent"], result["batched"] = {}, {}
    for count in args.concurrency:
        wall, outputs = timed_threads(count, lambda i: generate(TEXT, args.frames)[0])
        result["concurrent"][str(count)] = aggregate_figures(
            wall, [frames_of(pcm) for pcm in outputs],
            f"{count} threads, each generate_custom_voice(one text) on one model; torch intra-op threads "
            f"{args.threads} per call", same=all(np.array_equal(pcm, single) for pcm in outputs))
        began = time.perf_counter()
        outputs = generate([TEXT] * count, args.frames)
        result["batched"][str(count)] = aggregate_figures(
            time.perf_counter() - began, [frames_of(pcm) for pcm in outputs],
            f"one generate_custom_voice call with a list of {count} texts (one batched forward pass)")
    return result


def bench_vox(args) -> dict:
    import numpy as np
    import vox

    result = {"version": vox.__version__, "runtime": "vox C++ engine, f32 weights (vox build --dtype f32)"}
    load = time.perf_counter()
    engine = vox.Engine(str(args.tmod), device="cpu", threads=args.threads)
    result["load_s"] = round(time.perf_counter() - load, 2)
    plan = engine.plan
    result["plan"] = {key: plan.get(key) for key in ("backend", "mode", "threads", "max_sessions", "spin")}
    voice = engine.speaker_voice(SPEAKER)

    def stream(frames: int) -> tuple[np.ndarray, float]:
        """The request's audio and the seconds to its first chunk; temperature 0 is vox's greedy decoding."""
        began, first, chunks = time.perf_counter(), None, []
        for chunk in engine.stream(TEXT, voice, language=LANGUAGE, max_frames=frames, temperature=0.0,
                                   sub_temperature=0.0, seed=0):
            if first is None:
                first = time.perf_counter() - began
            chunks.append(chunk)
        return np.concatenate(chunks) if chunks else np.zeros(0, np.float32), first

    stream(min(args.frames, 4))  # warm-up
    began = time.perf_counter()
    single, first = stream(args.frames)
    result["one_stream"] = one_stream_figures(time.perf_counter() - began, frames_of(single), first)
    result["streams"] = True
    result["concurrent"] = {}
    for count in args.concurrency:
        wall, outputs = timed_threads(count, lambda i: stream(args.frames))
        figures = aggregate_figures(
            wall, [frames_of(pcm) for pcm, _ in outputs],
            f"{count} threads, each Engine.stream() on one shared Engine (threads={args.threads})",
            same=all(np.array_equal(pcm, single) for pcm, _ in outputs))
        figures["first_audio_s_max"] = round(max(first or wall for _, first in outputs), 3)
        result["concurrent"][str(count)] = figures
    return result
