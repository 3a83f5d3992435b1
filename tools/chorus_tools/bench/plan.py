"""tools/bench.py's plan (what to run, from its flags) and the constants every part of it shares."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

FRAMES_PER_AUDIO_S = 12.5  # Qwen3-TTS 12 Hz codec: one frame = 1920 samples at 24 kHz = 80 ms
BUCKETS = (128, 256, 512, 1024)
LOOKAHEAD = 2  # wyoming_chorus.speech.sentence_audio.LOOKAHEAD: sentences of one reply generating at once
BENCH_SEED = 1234

_T0 = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f} s] {message}", flush=True)


@dataclass
class Plan:
    rooms: list[int]
    static_rooms: list[int]
    serial_rooms: list[int]
    poisson_requests: int
    load: float
    rate: float | None
    readers: int
    probes: int
    engine_batches: list[int]
    engine_steps: int
    context: int
    timeout: float
    start_timeout: float
    full_readouts: bool
    mode: str
    readout_words: int
    inference_precision: str = ""  # engine.inference_precision of every server and the engine level; "" = default
    fcfs: bool = True  # run the FCFS server beside the playback one (issue 18's baseline)
    rounds: int = 2  # A-B-A-B rounds of the household scenarios on the playback and FCFS servers
    weights_mix: dict[str, float] = field(default_factory=lambda: {"announce": 5, "assistant": 4, "readout": 1})


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def make_plan(args) -> Plan:
    quick = args.quick
    pick = (lambda flag, q, full: flag if flag is not None else (q if quick else full))  # noqa: E731
    return Plan(
        rooms=ints(pick(args.rooms, "1,2", "1,2,4,8,16")),
        static_rooms=ints(pick(args.static_rooms, "1,2", "1,4,8")),
        serial_rooms=ints(pick(args.serial_rooms, "1,2", "1,4")),
        poisson_requests=pick(args.poisson_requests, 4, 10),
        # quick: arrivals about a second apart, so that its four Poisson runs (two rounds of two servers) take seconds
        # each instead of ~20 s at the rate a tiny model's capacity would give (a read-out's 80 s of audio in the mix).
        load=args.load, rate=pick(args.rate, 1.0, None),
        readers=pick(args.readers, 7, 7),
        probes=pick(args.probes, 2, 3),
        engine_batches=ints(pick(args.engine_batches, "1,8,16", "1,8,16")),
        engine_steps=pick(args.engine_steps, 4, 8),
        context=pick(args.context, 32, 128),
        timeout=pick(args.timeout, 60.0, 1500.0),
        start_timeout=pick(args.start_timeout, 120.0, 900.0),
        # Cut in --quick too: a read-out's 80 s of audio took 15-25 s on a loaded 2-core box even with the tiny
        # model, and the A-B-A-B Poisson arrivals run it four times.
        full_readouts=args.full_readouts,
        mode=args.mode,
        readout_words=args.readout_words,
        inference_precision=getattr(args, "inference_precision", "") or "",
        fcfs=not getattr(args, "skip_fcfs", False),
        rounds=max(1, getattr(args, "rounds", 2)),
    )
