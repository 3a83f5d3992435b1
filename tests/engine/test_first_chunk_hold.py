"""The hold before a reply's first chunk (engine/first_chunk_hold.py) and the playback policy's steps around it, over
scripted step costs, codec loads and clocks: a reply that cannot be made as fast as it is spoken waits just long
enough to then play with no gap, if its first sound can still come in time; else it goes out at once. No server, no
OpenVINO."""
from __future__ import annotations

from time import monotonic

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from wyoming_chorus.config import SchedulerSettings
from wyoming_chorus.engine.codec_load import CodecLoad
from wyoming_chorus.engine.first_chunk_hold import FirstChunkHold, hold_seconds
from wyoming_chorus.engine.loop_periods import LoopPeriods
from wyoming_chorus.engine.pacing import PlaybackPacing, pacing_for
from wyoming_chorus.engine.playback_policy import PlaybackLimits, PlaybackPolicy
from wyoming_chorus.engine.sequence import Sequence
from wyoming_chorus.engine.stats import StepReport
from wyoming_chorus.engine.step_cost import StepCost
from wyoming_chorus.playback_clock import PlaybackClock

FRAME = 0.08  # seconds of audio per frame
H = 8


def sentence(seq_id: int, frames: int, clock: PlaybackClock | None) -> Sequence:
    """A sentence of `frames` frames (its frame cap; its text long enough not to cap the guess below it)."""
    rng = np.random.default_rng(seq_id)
    seq = Sequence(seq_id, rng.standard_normal((4, H)).astype(np.float32),
                   rng.standard_normal((frames, H)).astype(np.float32), np.full(H, 0.5, np.float32), frames)
    seq.clock = clock
    return seq


def step_cost(**seconds_by_batch: float) -> StepCost:
    cost = StepCost()
    for batch, seconds in seconds_by_batch.items():
        cost.record(int(batch.removeprefix("b")), seconds)
    return cost


def plays_without_a_gap(rest: float, made: float, rate: float, hold: float) -> bool:
    """Audio made at `rate` from t=0 (`made` already), played at 1x from t=hold: never behind, checked where it is
    tightest (the end of the making; before it the gap only shrinks or grows linearly)."""
    end = rest / rate
    return made + rate * end >= end - hold - 1e-9


@given(st.floats(0.1, 60.0), st.floats(0.0, 2.0), st.floats(0.05, 3.0))
@example(rest=20.0, made=0.32, rate=0.7)
def test_the_hold_is_the_shortest_that_plays_with_no_gap(rest, made, rate):
    hold = hold_seconds(rest, made, rate)
    assert plays_without_a_gap(rest, made, rate, hold)
    if hold > 0.01:
        assert not plays_without_a_gap(rest, made, rate, hold - 0.01)
    if rate >= 1:
        assert hold == 0.0


def test_a_short_reply_made_slower_than_it_is_spoken_waits_just_long_enough():
    """0.6b on 2 cores: a step of one takes 0.114 s for 0.08 s of audio (rate 0.7). A 3.2 s announcement needs
    3.2 * (1/0.7 - 1) = 1.37 s of hold: its first sound can still come inside the 1.5 s allowed, so it waits."""
    clock = PlaybackClock(now=100.0)
    announcement = sentence(1, 40, clock)
    FirstChunkHold(step_cost(b1=0.114), FRAME, max_first_audio_seconds=1.5).plan([announcement])
    hold = 3.2 * (0.114 / 0.08 - 1)
    assert clock.release_at(now=100.05) == pytest.approx(100.05 + hold)
    assert clock.release_at(now=100.3) == pytest.approx(100.05 + hold)  # fixed at the first chunk's arrival


def test_a_streamed_reply_held_at_its_writer_is_planned_again_as_its_text_arrives():
    """A streamed reply's first chunk is ready with 100 characters of its text in hand (7 s): at rate 0.08 / 0.084 it
    waits 7 * 0.05 = 0.35 s. While it waits, 100 more arrive (14 s): planned again 0.1 s later it needs 0.7 s from
    then. Then the rest of a long read-out arrives (140 s: 7 s of hold, past its latest first sound): it goes out."""
    characters = 100
    clock = PlaybackClock(now=100.0, text_length=lambda: characters)
    reply = sentence(1, 2000, clock)
    hold = FirstChunkHold(step_cost(b1=0.084), FRAME, 1.5)
    hold.plan([reply], now=100.4)
    assert clock.release_at(now=100.4) == pytest.approx(100.4 + 7.0 * (0.084 / 0.08 - 1))
    characters = 200
    hold.plan([reply], now=100.5)
    assert clock.release_at(now=100.5) == pytest.approx(100.5 + 14.0 * (0.084 / 0.08 - 1))
    characters = 2000
    hold.plan([reply], now=100.6)
    assert clock.release_at(now=100.6) == pytest.approx(100.4)  # its first_ready: at once
    clock.wrote(0.32, now=100.6)
    characters = 100
    hold.plan([reply], now=100.7)  # out: no more plans
    assert clock.release_at(now=100.7) == pytest.approx(100.4)


def test_a_reply_no_hold_makes_gap_free_goes_out_at_once():
    """A 20 s reply at rate 0.7 would need 8.6 s: its satellite would give up first. Waiting only moves silence from
    inside the reply to before it, so its first chunk goes out as soon as it is there."""
    clock = PlaybackClock(now=100.0)
    FirstChunkHold(step_cost(b1=0.114), FRAME, 1.5).plan([sentence(1, 250, clock)])
    assert clock.release_at(now=100.4) == 100.4


def test_a_reply_made_in_real_time_never_waits():
    clock = PlaybackClock(now=100.0)
    FirstChunkHold(step_cost(b1=0.04), FRAME, 1.5).plan([sentence(1, 250, clock)])
    assert clock.release_at(now=100.2) == 100.2


def test_the_rate_is_that_of_a_step_of_every_running_request():
    """Alone a 3.2 s announcement is made in real time (0.06 s a step); beside three readers a step takes 0.1 s (rate
    0.8): it needs 0.8 s of hold, and gets it."""
    cost = step_cost(b1=0.06, b4=0.1)
    clock = PlaybackClock(now=100.0)
    readers = [sentence(n, 250, PlaybackClock(now=90.0)) for n in (2, 3, 4)]
    for reader in readers:
        reader.clock.wrote(5.0, now=95.0)
    hold = FirstChunkHold(cost, FRAME, 1.5)
    hold.plan([sentence(1, 40, clock)])
    assert clock.release_at(now=100.1) == pytest.approx(100.1)
    late = PlaybackClock(now=100.0)
    hold.plan([sentence(1, 40, late), *readers])
    assert late.release_at(now=100.1) == pytest.approx(100.1 + 3.2 * (0.1 / 0.08 - 1))
    assert all(r.clock.first_ready is None for r in readers)  # playing replies are left alone


def test_a_deferred_sentence_and_a_zero_limit_plan_nothing():
    clock = PlaybackClock(now=100.0)
    ahead = sentence(1, 40, clock)
    ahead.deferred = True  # the reply's next sentence, made ahead of need: its first chunk is not the reply's
    FirstChunkHold(step_cost(b1=0.114), FRAME, 1.5).plan([ahead])
    assert clock.release_at(now=100.1) == 100.1
    off = PlaybackClock(now=100.0)
    FirstChunkHold(step_cost(b1=0.114), FRAME, 0.0).plan([sentence(2, 40, off)])
    assert off.release_at(now=100.1) == 100.1


def codec_load(seconds_per_audio_second: float, rooms: frozenset[int] = frozenset()) -> CodecLoad:
    """A codec thread that decoded whole blocks (0.32 s of audio) at this cost, and still owes audio to `rooms`."""
    load = CodecLoad()
    for _ in range(3):
        load.block_done(seconds_per_audio_second * 0.32, 0.32)
    load.rooms = rooms
    return load


def new_reply_beside_two_readers(now: float) -> tuple[PlaybackClock, list[Sequence]]:
    """A 3.2 s announcement just begun, in a batch with two readers already playing."""
    clock = PlaybackClock(now=now)
    readers = [sentence(n, 250, PlaybackClock(now=now - 10)) for n in (2, 3)]
    for reader in readers:
        reader.clock.wrote(5.0, now=now - 5)
    return clock, [sentence(1, 40, clock), *readers]


def test_a_reply_whose_codec_is_the_slower_part_waits_for_it():
    """f32 codec on AVX2: 0.45 s of decoding per audio second. The steps of three make 0.08 s of audio in 0.05 s (rate
    1.6: no hold from them), but the codec decodes one room's block at a time: each of three rooms gets
    1 / (3 x 0.45) = 0.74 s of audio a second, so the announcement needs 3.2 x (1.35 - 1) = 1.12 s of hold, through the
    pacing the engine builds (scheduler.policy playback)."""
    pacing = pacing_for(SchedulerSettings(), step_cost(b1=0.04, b3=0.05), FRAME, 4, codec_load(0.45))
    clock, batch = new_reply_beside_two_readers(now=100.0)
    pacing.skipped(batch)
    assert clock.release_at(now=100.1) == pytest.approx(100.1 + 3.2 * (3 * 0.45 - 1))


def test_a_codec_that_keeps_up_with_every_room_adds_no_hold():
    """0.2 s per audio second: three rooms get 1.67 s of audio a second each; the steps' rate (1.6) stands, no hold."""
    hold = FirstChunkHold(step_cost(b1=0.04, b3=0.05), FRAME, 1.5, codec_load(0.2))
    clock, batch = new_reply_beside_two_readers(now=100.0)
    hold.plan(batch)
    assert hold.rate(3) == pytest.approx(0.08 / 0.05)
    assert clock.release_at(now=100.1) == 100.1


def test_rooms_whose_audio_the_codec_still_owes_share_it():
    """The new reply runs alone, but the codec still owes audio to two rooms whose frames are all made: it is one of
    three rooms at the codec (0.74 s of audio a second each at 0.45 s per audio second), so it is held."""
    finished = [PlaybackClock(), PlaybackClock()]  # kept alive: the codec names its rooms by id()
    hold = FirstChunkHold(step_cost(b1=0.04), FRAME, 1.5, codec_load(0.45, rooms=frozenset(map(id, finished))))
    clock = PlaybackClock(now=100.0)
    hold.plan([sentence(1, 40, clock)])
    assert clock.release_at(now=100.1) == pytest.approx(100.1 + 3.2 * (3 * 0.45 - 1))


def test_before_the_codec_is_measured_the_steps_rate_stands():
    load = CodecLoad()
    load.block_done(0.45 * 0.32, 0.32)  # one block: not a figure yet
    hold = FirstChunkHold(step_cost(b1=0.04, b3=0.05), FRAME, 1.5, load)
    clock, batch = new_reply_beside_two_readers(now=100.0)
    hold.plan(batch)
    assert clock.release_at(now=100.1) == 100.1


class Time:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_while_a_reply_is_held_readers_running_dry_keep_their_steps():
    """Past the box's capacity (a step of three takes 0.2 s for 0.08 s of audio). While a new reply waits for its
    first block, a reader with little left joins only in real time (not at all here); once that block is at the
    writer (held there for its own listener), the reader runs again: the hold must not become the reader's gap."""
    time = Time()
    pacing = PlaybackPacing(PlaybackPolicy(PlaybackLimits(), step_cost(b1=0.15, b3=0.2), FRAME, now=time),
                            block_frames=4, first_chunks=FirstChunkHold(step_cost(b1=0.15, b3=0.2), FRAME, 1.5))
    new_clock = PlaybackClock(now=time.now)
    reader_clock, other_clock = PlaybackClock(), PlaybackClock()
    reader_clock.wrote(10.0, now=time.now - 9.5)  # half a second left
    other_clock.wrote(10.0, now=time.now - 9.6)
    new, reader, other = sentence(1, 40, new_clock), sentence(2, 250, reader_clock), sentence(3, 250, other_clock)
    assert pacing.skipped([new, reader, other]) == {2, 3}
    new_clock.release_at(now=time.now)  # its first chunk reached the writer: held there, nothing written yet
    assert pacing.skipped([new, reader, other]) == set()
    assert not pacing.steps.waits_for_first_audio(new)


def test_a_short_reply_heard_whole_so_far_goes_first_until_its_first_gap_beside_another():
    """Past the box's capacity (one step of four takes 0.2 s for 0.08 s of audio) two announcements (60 characters:
    ~4 s) with no gap so far run first, and readers running dry (long texts) join only while the step stays real
    time: they stay whole, the readers gap. Once they have gapped anyway (too many short ones at once) each is one
    reply among the others."""
    time = Time()
    policy = PlaybackPolicy(PlaybackLimits(), step_cost(b1=0.05, b2=0.07, b4=0.2), FRAME, now=time)
    announcement_clocks = [PlaybackClock(text_length=lambda: 60) for _ in range(2)]
    for clock in announcement_clocks:
        clock.wrote(1.0, now=time.now - 0.6)  # 0.4 s left
    reader_clocks = [PlaybackClock(text_length=lambda: 1200) for _ in range(2)]
    for clock in reader_clocks:
        clock.wrote(10.0, now=time.now - 9.8)  # 0.2 s left: less than the announcements
    announcements = [sentence(1 + n, 60, clock) for n, clock in enumerate(announcement_clocks)]
    readers = [sentence(3 + n, 250, clock) for n, clock in enumerate(reader_clocks)]
    assert policy.skipped([*announcements, *readers]) == {3, 4}
    assert policy.tiers[1] == policy.tiers[2] == "head_start" and policy.tiers[3] == "low_slack"
    for clock in announcement_clocks:
        clock.wrote(0.08, now=time.now + 1.0)  # a gap: 0.6 s of silence
    time.now += 1.0
    assert policy.skipped([*announcements, *readers]) == set()


def gapped_reply(time: Time, characters: int, written: float) -> PlaybackClock:
    """A reply's listener (`characters` of text) that heard `written` s of audio, then 0.6 s of silence, then a
    frame just now."""
    clock = PlaybackClock(text_length=lambda: characters)
    clock.wrote(written, now=time.now - written - 0.6)
    clock.wrote(0.08, now=time.now)
    return clock


def readers_running_dry(time: Time, first_id: int) -> list[Sequence]:
    """Two readers of long texts, 0.2 s of audio left to play each (low slack)."""
    clocks = [PlaybackClock(text_length=lambda: 1200) for _ in range(2)]
    for clock in clocks:
        clock.wrote(10.0, now=time.now - 9.8)
    return [sentence(first_id + n, 250, clock) for n, clock in enumerate(clocks)]


def test_the_only_short_reply_keeps_its_head_start_through_a_gap():
    """Alone among readers, an announcement that gapped anyway (the box is slower than real time even for it, or a
    stall took the cores) keeps the steps: beside the readers it would gap far more, and it keeps them out for a few
    seconds at most. (Demoted, one 0.12 s behind at RTF 1.1 went on at batch 8 and ended 0.5-1.2 s behind.)"""
    time = Time()
    policy = PlaybackPolicy(PlaybackLimits(), step_cost(b1=0.05, b3=0.2), FRAME, now=time)
    announcement_clock = gapped_reply(time, 60, written=1.0)
    assert announcement_clock.underrun_seconds > 0.5
    assert policy.skipped([sentence(1, 60, announcement_clock), *readers_running_dry(time, 2)]) == {2, 3}
    assert policy.tiers[1] == "head_start"


def test_the_only_short_reply_keeps_its_head_start_across_its_sentences():
    """An announcement of two sentences has both in the batch at once (the next one is made ahead), each with the
    reply's one clock: it is still the only short reply, and keeps its head start through a gap. (Counted by
    sentence, a two-sentence announcement among seven readers gapped 8.4-8.9 s, a one-sentence one 0.3-1.9 s.)"""
    time = Time()
    policy = PlaybackPolicy(PlaybackLimits(), step_cost(b1=0.05, b4=0.2), FRAME, now=time)
    clock = gapped_reply(time, 66, written=1.0)
    sentences = [sentence(1, 30, clock), sentence(2, 30, clock)]
    assert policy.skipped([*sentences, *readers_running_dry(time, 3)]) == {3, 4}
    assert policy.tiers[1] == policy.tiers[2] == "head_start"


def test_a_long_reply_in_its_last_seconds_is_not_the_only_short_reply():
    """A long reply's tail (6 s left of 21) that has gapped is short by what is left, but not short as a whole: it
    is not given the steps as the only short reply. Past the box's capacity it gapped long before, and run nearly
    alone it starved the others for little (0.6b INT8 on Zen 4, a mixed burst of 8: the assistants' tails one after
    another, 1.25-1.36 audio s per s against FCFS's 2.07-2.21, and more gaps)."""
    time = Time()
    policy = PlaybackPolicy(PlaybackLimits(), step_cost(b1=0.05, b3=0.2), FRAME, now=time)
    tail_clock = gapped_reply(time, 300, written=15.0)  # 21 s by its text
    assert tail_clock.expected_seconds(0.07) - tail_clock.written <= 8.0  # short by what is left
    assert policy.skipped([sentence(1, 300, tail_clock), *readers_running_dry(time, 2)]) == set()
    assert policy.tiers[1] != "head_start"


# ---- past the box's capacity: a short reply is made as a head start, and its hold is planned on that


def announcement_under_readers(now: float) -> tuple[PlaybackClock, list[Sequence]]:
    """A 3.29 s announcement (47 characters) just begun, beside seven readers of long texts, each with half a second
    of audio left to play (low slack)."""
    clock = PlaybackClock(now=now, text_length=lambda: 47)
    readers = []
    for n in range(7):
        reader = PlaybackClock(now=now - 20, text_length=lambda: 1200)
        reader.wrote(10.0, now=now - 9.5)
        readers.append(sentence(2 + n, 400, reader))
    return clock, [sentence(1, 40, clock), *readers]


SLOW_BOX = {"b1": 0.088, "b2": 0.1, "b8": 0.172}  # batch 1: RTF 1.1; batch 8: RTF 2.15


def test_a_short_reply_beside_readers_running_dry_is_planned_on_the_steps_it_gets_as_a_head_start():
    """The announcement will be made alone (its head start; the readers join only while the step stays real time,
    and a step of two is not): 3.29 x (0.088 / 0.08 - 1) = 0.33 s of hold plays it whole. Planned on a step of all
    eight (rate 0.47) it needed 3.8 s, past the 1.5 s allowed: it went out at once and gapped."""
    pacing = pacing_for(SchedulerSettings(), step_cost(**SLOW_BOX), FRAME, 4)
    now = monotonic()
    clock, batch = announcement_under_readers(now)
    assert pacing.skipped(batch) == {seq.id for seq in batch[1:]}
    assert clock.release_at(now=now + 0.4) == pytest.approx(now + 0.4 + 3.29 * (0.088 / 0.08 - 1))


def test_a_long_reply_beside_readers_is_still_planned_on_every_running_request():
    pacing = pacing_for(SchedulerSettings(), step_cost(**SLOW_BOX), FRAME, 4)
    now = monotonic()
    clock = PlaybackClock(now=now, text_length=lambda: 140)  # 9.8 s: not a head start once out
    _, readers_batch = announcement_under_readers(now)
    first_chunks = pacing.first_chunks
    assert first_chunks is not None
    first_chunks.max_first_audio_seconds = 60.0  # so that the planned hold shows
    first_chunks.plan([sentence(1, 130, clock), *readers_batch[1:]])
    assert clock.release_at(now=now + 0.4) == pytest.approx(now + 0.4 + 9.8 * (0.172 / 0.08 - 1))


def test_while_a_short_reply_is_held_readers_running_dry_do_not_take_its_steps():
    """Its hold was planned on the steps of a head start: readers that joined it meanwhile (eight at RTF 2.15) would
    make it late from its first block on. (A long reply's hold was planned on all running: they join it.)"""
    pacing = pacing_for(SchedulerSettings(), step_cost(**SLOW_BOX), FRAME, 4)
    now = monotonic()
    clock, batch = announcement_under_readers(now)
    clock.release_at(now=now + 0.4)  # its first chunk is at the writer, held there
    assert not pacing.steps.waits_for_first_audio(batch[0])
    assert pacing.skipped(batch) == {seq.id for seq in batch[1:]}


def test_the_first_block_made_is_not_audio_in_hand():
    """The listener gets the audio in decoder blocks (4 frames): once the first is made, the next comes only four
    steps later, so the first block is what plays first, not a lead on the rest. One frame past it is."""
    hold = FirstChunkHold(step_cost(b1=0.088), FRAME, 1.5, block_seconds=4 * FRAME)
    clock = PlaybackClock(now=100.0, text_length=lambda: 47)
    announcement = sentence(1, 40, clock)
    announcement.frames.extend(np.zeros(16, np.int32) for _ in range(5))
    hold.plan([announcement])
    rest = 3.29 - 5 * FRAME
    assert clock.release_at(now=100.4) == pytest.approx(100.4 + rest * (0.088 / 0.08 - 1) - FRAME)


def test_the_rate_is_the_loops_period_where_the_loop_ran_that_batch():
    """The runner's step alone is 0.072 s, within a frame; the loop comes round every 0.089 s (the codec shares the
    cores): a room is made at RTF 1.11, and the hold is planned on that."""
    periods, cost = LoopPeriods(), step_cost(b1=0.072)
    for n in range(10):
        periods.observe(StepReport(0, True, batch=1, frames=1, seconds=0.072), now=200.0 + 0.089 * n)
    hold = FirstChunkHold(cost, FRAME, 1.5, periods=periods)
    assert hold.rate(1) == pytest.approx(0.08 / 0.089)
    assert FirstChunkHold(cost, FRAME, 1.5).rate(1) == pytest.approx(0.08 / 0.072)
