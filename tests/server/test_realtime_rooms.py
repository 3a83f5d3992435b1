"""The capacity figure ("this box holds N rooms in real time now", chorus_realtime_rooms) and its warning agree with
what the rooms hear: a listener that plays each reply at 1x from its first chunk, over real TCP against the real
engine (tiny model). Faster than real time, the box holds the room and says nothing; made slower than real time (each
step of the runner takes longer than a frame lasts, as on a slow CPU), the room hears gaps and the box says it holds
0; one stalled step (another process took the cores) costs a room nothing it can hear, and the figure does not drop
for it. Then the same rules on scripted step periods."""
from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from chorus_tools.client import Reply, speak, tcp_uri
from wyoming_chorus.engine.codec_load import CodecLoad
from wyoming_chorus.engine.stats import EngineStats, StepReport
from wyoming_chorus.engine.step_cost import StepCost
from wyoming_chorus.engine.step_metrics import StepMetrics
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.playback_clock import PlaybackClock

from helpers import ServiceThread, free_port

FRAME = 0.08  # the tiny model's frame: 1920 samples at 24 kHz
WARNING = "rooms want audio at once and this box holds"
TEXT = "Once upon a time in a quiet village by the sea there lived an old fisherman and his patient wife."


class ThrottledRunner:
    """The engine's real runner, made slower: each step takes at least `step_seconds` (a slower CPU), or its step
    numbered `stall_at` takes `stall_seconds` more (a stall). It sleeps, as the native runner computes, without the
    GIL."""

    def __init__(self, runner, step_seconds: float = 0.0, stall_at: int | None = None, stall_seconds: float = 0.0):
        self._runner = runner
        self._step_seconds, self._stall_at, self._stall_seconds = step_seconds, stall_at, stall_seconds
        self._steps = 0

    def step(self, entries):
        started = time.perf_counter()
        output = self._runner.step(entries)
        time.sleep(max(self._step_seconds - (time.perf_counter() - started), 0.0))
        self._steps += 1
        if self._steps == self._stall_at:
            time.sleep(self._stall_seconds)
        return output

    def __getattr__(self, name: str):
        return getattr(self._runner, name)


class ThrottledDecoder:
    """The codec thread's real decoder, made slower: each push takes at least `seconds_per_audio_second` per second
    of the audio it makes (a slower CPU, or f32 on an AVX2 box at real dims), sleeping out the rest as the decoder
    computes: without the GIL, and here without the cores, so the engine loop's steps stay as fast as they were."""

    def __init__(self, decoder, seconds_per_audio_second: float):
        self._decoder, self._cost = decoder, seconds_per_audio_second

    def push(self, stream, codes):
        started = time.perf_counter()
        pcm = self._decoder.push(stream, codes)
        time.sleep(max(self._cost * len(pcm) / 24000 - (time.perf_counter() - started), 0.0))
        return pcm

    def __getattr__(self, name: str):
        return getattr(self._decoder, name)


@dataclass
class Heard:
    replies: list[Reply]  # one per room
    held: float  # chorus_realtime_rooms after the replies
    warnings: list[str]

    @property
    def reply(self) -> Reply:
        return self.replies[0]


async def _speak_at_once(port: int, rooms: int) -> list[Reply]:
    # A text of its own per room (identical texts at once are made once and heard in every room: speech/sharing.py),
    # each one sentence (one request: a room's next sentence made beside its first would be a batch of two).
    texts = [TEXT.replace("village", f"village number {room}") if room else TEXT for room in range(rooms)]
    return list(await asyncio.gather(*(speak(tcp_uri(port), text, timeout=300) for text in texts)))


def _hear(caplog, frames: int, codec_seconds_per_audio_second: float = 0.0, rooms: int = 1, **throttle) -> Heard:
    """The replies of `rooms` rooms speaking at once, each of up to `frames` frames, from a server on the tiny model
    whose runner is throttled, and its codec too if `codec_seconds_per_audio_second`."""
    from wyoming_chorus.config import EngineSettings, MetricsSettings, ServerSettings, Settings, ZeroconfSettings

    running = ServiceThread(Settings(
        server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=5.0),
        zeroconf=ZeroconfSettings(enabled=False),
        engine=EngineSettings(model="builtin:tiny", seed=1234, random_model_frames=frames, max_frames=frames),
        metrics=MetricsSettings(address="127.0.0.1", port=0),
    ))
    caplog.set_level(logging.WARNING, logger="wyoming_chorus.engine.core")
    with running:
        # Swapped in while the engine thread waits for its first request (the warm-up ran at full speed).
        core = running.service.engine.core
        core.runner = ThrottledRunner(core.runner, **throttle)
        if codec_seconds_per_audio_second:
            core.codec._decoder = ThrottledDecoder(core.codec._decoder, codec_seconds_per_audio_second)
        replies = asyncio.run(_speak_at_once(running.port, rooms))
        held = next(s.value for f in core.metrics.registry.collect() for s in f.samples
                    if s.name == "chorus_realtime_rooms")
    for reply in replies:
        assert reply.complete and reply.error is None, reply.error
    return Heard(replies, held, [r.getMessage() for r in caplog.records if WARNING in r.getMessage()])


def _agrees(heard: Heard) -> None:
    """A room that heard no gap was held, and nothing was said; one that heard gaps was told about. (The tiny model
    is made several times faster than real time on a machine of its own, but a machine shared with other work can
    slow it past real time: then the figure must say so too.)"""
    if heard.reply.underruns[0] == 0:
        assert heard.held >= 1 and not heard.warnings, "no gap was heard, yet the box said it could not keep up"
    else:
        assert heard.warnings, f"the room heard {heard.reply.underruns[1]:.2f} s of gaps and the box said nothing"


def test_a_room_made_faster_than_real_time_is_held_and_nothing_is_said(caplog):
    heard = _hear(caplog, frames=150)
    assert heard.reply.audio_s > 5
    _agrees(heard)


def test_a_room_made_slower_than_real_time_hears_gaps_and_the_box_says_it_holds_none(caplog):
    heard = _hear(caplog, frames=40, step_seconds=2 * FRAME)  # a step takes two frames' time: RTF about 2
    assert heard.reply.underruns[0] > 0
    assert heard.held == 0
    assert heard.warnings == ["1 rooms want audio at once and this box holds 0 in real time now: the replies with the "
                              "most audio delivered may pause"]


def test_a_room_whose_codec_is_slower_than_real_time_hears_gaps_and_the_box_says_it_holds_none(caplog):
    # The loop makes each frame many times faster than it plays, but the codec turns a second of codes into audio in
    # two: the room hears gaps however fast its frames came (the loop's periods alone said it was held).
    heard = _hear(caplog, frames=40, codec_seconds_per_audio_second=2.0)
    assert heard.reply.underruns[0] > 0
    assert heard.held == 0
    assert heard.warnings == ["1 rooms want audio at once and this box holds 0 in real time now: the replies with the "
                              "most audio delivered may pause"]


def test_two_rooms_whose_audio_the_codec_makes_slower_than_it_plays_are_not_both_held(caplog):
    # 0.7 s of decoding per audio second: one room's audio keeps up, two rooms' need 1.4 s per second. The codec
    # decodes one room's block at a time, so together they hear gaps, and the box holds one of them.
    # (The loop holds both on a machine of its own; on one shared with other work it may hold fewer: then the box
    # holds fewer than one, which is no less true.)
    heard = _hear(caplog, frames=40, codec_seconds_per_audio_second=0.7, rooms=2)
    assert sum(reply.underruns[0] for reply in heard.replies) > 0
    assert heard.held <= 1
    assert len(heard.warnings) == 1
    assert re.fullmatch("2 rooms want audio at once and this box holds [01] in real time now: the replies with the "
                        "most audio delivered may pause", heard.warnings[0])


def test_one_stalled_step_that_no_room_hears_does_not_make_the_box_hold_none(caplog):
    # After 60 steps the room has seconds of audio ahead of it: a 1.5 s stall is not a gap it hears. The stall is
    # longer than the second between two capacity checks, so the next check comes right after it.
    heard = _hear(caplog, frames=150, stall_at=60, stall_seconds=1.5)
    assert heard.reply.ended - heard.reply.started > 1.5  # it ran through the stall
    _agrees(heard)


# ---- the same rules on scripted step periods


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Room:  # what the warning reads of a live request: its listener's clock
    clock: PlaybackClock


STATS = EngineStats(blocks_total=64, blocks_used=4, blocks_cached=0, running=1, waiting=0, awaiting_text=0,
                    rows_reused=0, steps=0, frames=0, alive=True)


def _run(steps: list[tuple[float, float]], rooms: int = 1, codec: CodecLoad | None = None,
         codec_rooms: int = 0) -> tuple[int | None, list[str]]:
    """Steps of one request each, as (step seconds, seconds the loop took from the last step's end to this one's),
    recorded into the step-cost model as the engine records them, beside `codec` (None: a codec never measured);
    `rooms` listeners have requests in the engine, `codec_rooms` more only audio still owed at the codec. Returns
    the last capacity and the warnings."""
    cost, clock = StepCost(), Clock()
    for batch, seconds in ((1, 0.01), (2, 0.011), (4, 0.012), (8, 0.015), (16, 0.02)):  # the warm-up's figures
        for _ in range(3):
            cost.record(batch, seconds)
    codec = codec or CodecLoad()
    observer = StepMetrics(Metrics(), cost, FRAME, 16, codec, clock=clock)
    live = [Room(PlaybackClock()) for _ in range(rooms)]
    owed = [PlaybackClock() for _ in range(codec_rooms)]
    codec.rooms = frozenset(id(clock) for clock in owed)
    warnings: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("wyoming_chorus.engine.core").addHandler(handler)
    try:
        for seconds, period in steps:
            clock.now += period
            cost.record(1, seconds)
            observer.observe(StepReport(0, True, batch=1, frames=1, seconds=seconds), STATS, live)
    finally:
        logging.getLogger("wyoming_chorus.engine.core").removeHandler(handler)
    return observer.rooms_in_real_time(), warnings


def _codec(*seconds_per_audio_second: float) -> CodecLoad:
    """A codec thread that decoded whole blocks (4 frames: 0.32 s of audio) at these costs."""
    load = CodecLoad()
    for cost in seconds_per_audio_second:
        load.block_done(cost * 0.32, 0.32)
    return load


def test_scripted_a_stall_among_fast_steps_leaves_the_capacity_as_the_steps_make_it():
    held, warnings = _run([(0.01, 0.012)] * 200 + [(1.5, 1.5)] + [(0.01, 0.012)] * 3)
    assert held == 16 and not warnings


def test_scripted_time_between_steps_counts_as_the_rooms_hear_it():
    # Each step's runner is fast, but the loop comes round every 0.15 s (host work, waits at the codec): a room gets
    # a frame of 0.08 s every 0.15 s.
    held, warnings = _run([(0.01, 0.15)] * 40)
    assert held == 0 and len(warnings) == 1 and "1 rooms want audio at once and this box holds 0" in warnings[0]


def test_scripted_steps_slower_than_a_frame_hold_none():
    held, warnings = _run([(0.2, 0.2)] * 20, rooms=2)
    assert held == 0 and warnings == ["2 rooms want audio at once and this box holds 0 in real time now: the replies "
                                      "with the most audio delivered may pause"]


def test_scripted_steps_slow_every_now_and_then_count_at_their_mean():
    # Three steps of 0.07 s, then one that shares the cores with a codec block, 0.12 s: the median says 0.07, within a
    # frame, but a frame comes every 0.0825 s on average and a listener who plays at once hears the room fall behind.
    held, warnings = _run([(0.07, 0.07), (0.07, 0.07), (0.07, 0.07), (0.12, 0.12)] * 15)
    assert held == 0 and len(warnings) == 1 and "1 rooms want audio at once and this box holds 0" in warnings[0]


@pytest.mark.parametrize("period", [0.05, 0.07])
def test_scripted_steps_within_a_frame_hold_the_room(period):
    held, warnings = _run([(period, period)] * 40)
    assert held is not None and held >= 1 and not warnings


FAST_LOOP = [(0.01, 0.012)] * 120  # 1.4 s of a loop that alone holds all 16 rooms (capacity checked each 1 s)


def test_scripted_a_codec_slower_than_real_time_holds_none_however_fast_the_loop():
    held, warnings = _run(FAST_LOOP, codec=_codec(1.2, 1.2, 1.2))
    assert held == 0 and warnings == ["1 rooms want audio at once and this box holds 0 in real time now: the replies "
                                      "with the most audio delivered may pause"]


def test_scripted_the_codec_holds_as_many_rooms_as_fit_in_its_second():
    # f32 on AVX2 at real dims: ~0.45 s of decoding per audio second, so two rooms fit (0.9 s) and three do not.
    held, warnings = _run(FAST_LOOP, rooms=3, codec=_codec(0.45, 0.45, 0.45))
    assert held == 2 and warnings == ["3 rooms want audio at once and this box holds 2 in real time now: the replies "
                                      "with the most audio delivered may pause"]


def test_scripted_the_box_holds_the_fewer_of_the_loop_and_the_codec():
    fast_codec = (0.1, 0.1, 0.1)  # ten rooms' audio in a second
    assert _run([(0.2, 0.2)] * 20, codec=_codec(*fast_codec))[0] == 0  # steps slower than a frame: the loop's none
    assert _run(FAST_LOOP, codec=_codec(*fast_codec))[0] == 10  # the loop holds 16: the codec's ten


def test_scripted_a_room_whose_frames_are_all_made_still_wants_audio_at_the_codec():
    # The loop has made every frame of the room's reply; the codec, slower than real time, still owes its audio.
    held, warnings = _run(FAST_LOOP, rooms=0, codec=_codec(1.5, 1.5, 1.5), codec_rooms=1)
    assert held == 0 and len(warnings) == 1 and warnings[0].startswith("1 rooms want audio at once")


def test_scripted_the_codec_counts_once_measured_and_a_stalled_block_does_not_move_it():
    assert _run(FAST_LOOP, codec=_codec(1.2, 1.2))[0] == 16  # two blocks are not yet a figure: the loop's alone
    held, warnings = _run(FAST_LOOP, codec=_codec(0.2, 0.2, 0.2, 0.2, 6.0))
    assert held == 5 and not warnings


@example(cost=1 / 3, most=16)
@example(cost=0.0, most=4)
@given(cost=st.floats(0.0, 3.0), most=st.integers(1, 64))
def test_the_codec_holds_the_most_rooms_whose_seconds_fit_in_one(cost, most):
    held = _codec(cost, cost, cost).rooms_held(most)
    assert held is not None and 0 <= held <= most
    assert held * cost <= 1.0 + 1e-12
    assert held == most or (held + 1) * cost > 1.0 - 1e-12
