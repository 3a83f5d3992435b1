"""Speaking while the LLM writes: time to first audio and gaps, streaming input on vs sentence at a time.

Two servers on loopback (server.streaming_input true and false), the same model and seed. Each run streams one
reply as an LLM sends it: deltas of 3-8 characters every 20-60 ms (seeded), a first sentence of 25 words, then a
second one, then synthesize-stop. Measured on the client, over real TCP with wyoming's own client:
- time to first audio: from the first delta sent to the first audio-chunk;
- gaps: a listener plays the audio from its first chunk on; a chunk that arrives after the audio before it has
  played out is a stall (the playback clock then moves on by the stall). Total and longest stall per reply.
Random-weight models end replies after engine.benchmark_frames_per_word (5 frames a word: natural speech length).

    python tools/bench_streaming_input.py [--model builtin:tiny | --preset 0.6b] [--runs 5] [--json out.json]
    python tools/bench_streaming_input.py --quick   # two runs each, tiny model (CI)
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import statistics
from pathlib import Path

from chorus_tools.client import Stream, speak, tcp_uri
from chorus_tools.models import preset_model
from chorus_tools.servers import ServiceThread, loopback_settings
from wyoming_chorus.cpu import cpu_facts

os.environ.setdefault("CI", "true")  # OpenVINO's telemetry opt-out, before anything imports it

FIRST = ("The washing machine in the basement has finished its cycle and the clothes are ready to go into the dryer "
         "before you leave for the office this morning.")  # 25 words
SECOND = " I also turned the heating down to nineteen degrees."


def deltas(text: str, rng: random.Random) -> list[tuple[float, str]]:
    """(delay before it, delta): 3-8 characters every 20-60 ms."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(3, 8)
        out.append((rng.uniform(0.020, 0.060), text[i:i + n]))
        i += n
    return out


async def one_reply(uri: str, schedule: list[tuple[float, str]], text: str) -> dict:
    reply = await speak(uri, text, Stream(schedule))
    if not reply.chunks:
        return {"first_audio_s": None, "stall_total_s": None, "stall_max_s": None, "audio_s": 0.0}
    clock, stalls = reply.chunks[0][0], []  # (arrival time, seconds of audio in the chunk)
    for arrival, seconds in reply.chunks:
        stall = max(0.0, arrival - clock)
        stalls.append(stall)
        clock = max(clock, arrival) + seconds
    return {"first_audio_s": reply.first_audio_s, "stall_total_s": sum(stalls[1:]),
            "stall_max_s": max(stalls[1:], default=0.0), "audio_s": reply.audio_s,
            "text_sent_s": sum(d for d, _ in schedule)}


def model_dir(args) -> str:
    return args.model if args.preset is None else str(preset_model(Path(args.cache), args.preset))


def measure(model: str, streaming_input: bool, runs: int) -> list[dict]:
    from wyoming_chorus.config import EngineSettings, ServerSettings

    engine = EngineSettings(model=model, device="CPU", seed=7, benchmark_frames_per_word=5.0)
    server = dataclasses.replace(ServerSettings(), streaming_input=streaming_input)
    with ServiceThread(loopback_settings(engine, server)) as running:
        text = FIRST + SECOND
        results = []
        for run in range(runs):
            results.append(asyncio.run(one_reply(tcp_uri(running.port), deltas(text, random.Random(run)), text)))
    return results


def summary(results: list[dict]) -> dict:
    def median(key):
        values = [r[key] for r in results if r[key] is not None]
        return round(statistics.median(values), 3) if values else None
    return {key: median(key) for key in ("first_audio_s", "stall_total_s", "stall_max_s", "audio_s", "text_sent_s")}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="builtin:tiny")
    parser.add_argument("--preset", choices=["0.6b"], help="a random-weight model at real dimensions instead")
    parser.add_argument("--cache", default="models")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    runs = 2 if args.quick else args.runs
    model = model_dir(args)
    figures = {mode: summary(measure(model, mode == "streaming input", runs))
               for mode in ("sentence at a time", "streaming input")}
    figures["isa"] = cpu_facts().isa  # from CPUID: what the kernels dispatched on
    base, new = figures["sentence at a time"], figures["streaming input"]
    print(f"model {model}, {runs} runs each, ISA {figures['isa']}, medians:")
    print(f"{'mode':<20} {'first audio s':>14} {'stalls s':>9} {'longest s':>10} {'audio s':>8}")
    for mode in ("sentence at a time", "streaming input"):
        f = figures[mode]
        print(f"{mode:<20} {f['first_audio_s']:>14} {f['stall_total_s']:>9} {f['stall_max_s']:>10} {f['audio_s']:>8}")
    if base["first_audio_s"] and new["first_audio_s"]:
        print(f"first audio {base['first_audio_s'] / new['first_audio_s']:.1f}x sooner with streaming input")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
