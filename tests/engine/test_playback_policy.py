"""The playback policy (scheduler.policy: playback) over the fake runner, with scripted clocks: who takes each step,
who sits it out, and that blocks and accounting stay exact. No server, no OpenVINO."""
from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from chorus_tools.scheduler.fake_runner import FakeRunner, Recorder, make_seq
from wyoming_chorus.engine.blocks import BlockManager
from wyoming_chorus.engine.codec_load import CodecLoad
from wyoming_chorus.engine.pacing import PlaybackPacing
from wyoming_chorus.engine.playback_policy import PlaybackLimits, PlaybackPolicy
from wyoming_chorus.engine.scheduler import Scheduler
from wyoming_chorus.engine.step_cost import StepCost, probe_batches
from wyoming_chorus.engine.urgent_steps import FIRST_AUDIO, HEAD_START, QUIET, codec_level
from wyoming_chorus.playback_clock import PlaybackClock

FRAME = 0.08


class Time:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cost(**seconds_by_batch: float) -> StepCost:
    measured = StepCost()
    for batch, seconds in seconds_by_batch.items():
        measured.record(int(batch.removeprefix("b")), seconds)
    return measured


def listener(time: Time, written: float, played: float) -> PlaybackClock:
    """A clock whose listener has heard `played` seconds of `written` (no pause so far)."""
    clock = PlaybackClock()
    clock.wrote(written, now=time.now - played)
    return clock


def seq_with(seq_id: int, clock: PlaybackClock | None):
    seq = make_seq(seq_id, 2, 60)
    seq.clock = clock
    return seq


def policy(time: Time, step_cost: StepCost | None = None) -> PlaybackPolicy:
    return PlaybackPolicy(PlaybackLimits(5.0, 1.0, 4.0), step_cost or StepCost(), FRAME, now=time)


def codec_owing(rooms: int) -> CodecLoad:
    """A codec measured at 0.19 s per audio second (it holds up to five rooms), owing audio to `rooms` rooms."""
    codec = CodecLoad()
    for _ in range(3):
        codec.block_done(0.06, 0.32)
    codec.rooms = frozenset(range(rooms))
    return codec


def paced(steps: PlaybackPolicy) -> PlaybackPacing:
    """The policy as the engine hands it to the scheduler."""
    return PlaybackPacing(steps, block_frames=4)


# ---- the step cost ---------------------------------------------------------------------------------------------

def test_step_cost_interpolates_and_extends_the_measured_sizes():
    measured = cost(b1=0.05, b4=0.08)
    assert measured.predict(1) == pytest.approx(0.05) and measured.predict(2) == pytest.approx(0.06)
    assert measured.predict(8) == pytest.approx(0.08 + 4 * 0.01)  # the last slope, extended
    assert cost(b2=0.1).predict(4) == pytest.approx(0.2)  # one size alone: proportional, the cautious guess
    assert cost(b4=0.1).predict(1) == pytest.approx(0.1)
    assert StepCost().predict(3) is None and StepCost().rooms_in_real_time(FRAME, 16) is None
    assert measured.rooms_in_real_time(FRAME, 16) == 4


def test_a_batch_sizes_first_steps_count_their_fastest():
    measured = cost(b2=1.5)  # a new shape's first step: the plugin prepared its kernels in it
    measured.record(2, 0.10)
    measured.record(2, 0.12)
    assert measured.predict(2) == pytest.approx(0.10)
    measured.record(2, 0.20)  # past the first steps: the moving average
    assert measured.predict(2) == pytest.approx(0.10 + 0.2 * 0.10)


def test_the_warm_up_probes_powers_of_two_up_to_max_batch():
    assert probe_batches(16) == [2, 4, 8, 16]
    assert probe_batches(6) == [2, 4, 6]
    assert probe_batches(2) == [2]
    assert probe_batches(1) == []


def test_step_cost_follows_the_machine_as_it_drifts():
    measured = cost(b1=0.2)
    for _ in range(30):
        measured.record(1, 0.05)
    assert measured.predict(1) == pytest.approx(0.05, rel=0.01)


# ---- who takes the step -----------------------------------------------------------------------------------------

def test_a_reply_with_plenty_of_audio_sits_out_while_others_need_steps():
    time = Time()
    new, reader = seq_with(1, PlaybackClock()), seq_with(2, listener(time, written=20.0, played=10.0))
    assert policy(time).skipped([new, reader]) == {2}  # 10 s left to play: more than max_slack
    assert policy(time).skipped([reader]) == set()  # alone, it runs: an idle box saves nothing


def test_head_starts_always_run_and_cut_low_slack_readers_when_the_step_would_fall_behind():
    time = Time()
    slow = cost(b1=0.05, b2=0.07, b3=0.09)  # three in a step is slower than real time
    new = seq_with(1, PlaybackClock())
    long_reader = seq_with(2, listener(time, written=60.0, played=59.5))
    short_reader = seq_with(3, listener(time, written=8.0, played=7.5))
    # Both readers are urgent (0.5 s left), one fits: the one with less audio delivered; the pause falls on the other.
    assert policy(time, slow).skipped([long_reader, short_reader, new]) == {2}
    # Without a head start running, urgent readers all run, whatever the cost.
    assert policy(time, slow).skipped([long_reader, short_reader]) == set()


def test_beside_other_listeners_a_replys_next_sentence_made_ahead_takes_only_steps_to_spare():
    """An announcement's second sentence, made ahead of need, shares its listener's clock: ranked by it, it took a
    row beside the sentence heard now from the first step on. 0.6b INT4 on 2 AVX2 cores: one row 0.06 s, three 0.1,
    slower than a frame, so the sentence heard gapped while the next one was made early. Alone, it still runs beside
    the sentence heard: then it is ready when its turn comes."""
    time = Time()
    slow, fast = cost(b1=0.06, b2=0.085, b3=0.1), cost(b1=0.04, b2=0.05, b3=0.07)
    clock = PlaybackClock(text_length=lambda: 60)  # 4.2 s of audio: short
    clock.wrote(0.64, now=time.now - 0.3)
    heard, ahead = seq_with(1, clock), seq_with(2, clock)
    ahead.deferred = True
    reader = seq_with(5, listener(time, written=12.0, played=10.5))  # another room, 1.5 s in hand
    assert policy(time, slow).skipped([heard, ahead, reader]) == {2, 5}
    assert policy(time, fast).skipped([heard, ahead, reader]) == set()  # steps to spare: made ahead
    assert policy(time, slow).skipped([heard, ahead]) == set()  # its listener alone: made ahead as before
    # Before the reply's first sound, the same: the first sentence is what its listener waits for.
    fresh = PlaybackClock(text_length=lambda: 60)
    first, second = seq_with(3, fresh), seq_with(4, fresh)
    second.deferred = True
    assert policy(time, slow).skipped([first, second, reader]) == {4, 5}
    ahead.deferred = False  # its listener reached it: needed now
    assert 2 not in policy(time, slow).skipped([heard, ahead, reader])


def test_while_a_first_sound_waits_readers_with_room_join_only_in_real_time():
    time = Time()
    new = seq_with(1, PlaybackClock())  # its listener waits for the first audio
    readers = [seq_with(i, listener(time, written=10.0 + i, played=8.0 + i - 0.5 * i)) for i in (2, 3, 4)]
    # slack: 2.0, 2.5, 3.0 s: none urgent, none full
    assert policy(time, cost(b1=0.03, b2=0.05, b3=0.07, b4=0.09)).skipped([new, *readers]) == {4}
    assert policy(time, cost(b1=0.03, b4=0.06)).skipped([new, *readers]) == set()  # batching is nearly free here
    assert policy(time).skipped([new, *readers]) == set()  # nothing measured yet: nobody is cut


def test_past_real_time_readers_with_room_join_while_a_row_adds_frames_per_second():
    """With no first sound or head start at stake, a reply with slack is cut only where its row costs the step more
    than the step's cost per row: a cut that makes less audio in all only moves the gaps around."""
    time = Time()
    readers = [seq_with(i, listener(time, written=10.0 + i, played=8.0 + i - 0.5 * i)) for i in (1, 2, 3)]
    urgent = seq_with(4, listener(time, written=30.0, played=29.5))  # 0.5 s left: low slack, always runs
    streaming = cost(b1=0.07, b2=0.085, b3=0.10, b4=0.115)  # weights read once a step: rows are cheap
    assert policy(time, streaming).skipped([urgent, *readers]) == set()
    computing = cost(b1=0.07, b2=0.15, b3=0.24, b4=0.33)  # each row costs more than the step's average
    assert policy(time, computing).skipped([urgent, *readers]) == {1, 2, 3}
    # A head start running keeps the cut at real time: the announcement's steps stay short.
    clock = PlaybackClock(text_length=lambda: 40)  # ~2.8 s of audio by its text: short
    clock.wrote(1.0, now=time.now - 0.5)
    assert policy(time, streaming).skipped([seq_with(5, clock), urgent, *readers]) == {1, 2, 3, 4}


def test_where_an_announcement_gaps_even_alone_the_others_ride_along_if_they_cost_it_little():
    """A box that makes even one room slower than real time (0.6b INT8 on 2 Zen 4 cores: RTF 1.07): cutting the
    assistant's reply beside an announcement buys the announcement no whole reply, and starved the assistant's for the
    announcement's seconds. Where everyone's step costs the announcement at most RIDE_ALONG_SLOWDOWN more, all run."""
    time = Time()
    codec = codec_owing(3)

    def policy(time: Time, step_cost: StepCost) -> PlaybackPolicy:
        return PlaybackPolicy(PlaybackLimits(5.0, 1.0, 4.0), step_cost, FRAME, now=time, codec=codec)

    clock = PlaybackClock(text_length=lambda: 40)  # ~2.8 s of audio by its text: a head start
    clock.wrote(1.0, now=time.now - 0.5)
    announcement = seq_with(1, clock)
    assistant = seq_with(2, listener(time, written=6.0, played=5.6))  # 0.4 s left: low slack
    reader = seq_with(3, listener(time, written=10.0, played=8.0))  # 2 s left: slack
    both = [announcement, assistant]
    assert policy(time, cost(b1=0.088, b2=0.096)).skipped(both) == set()  # 1.09x: it rides along
    assert policy(time, cost(b1=0.088, b2=0.11)).skipped(both) == {2}  # 1.25x: the announcement keeps its steps
    assert policy(time, cost(b1=0.06, b2=0.11)).skipped(both) == {2}  # real time alone: it can be made whole
    assert policy(time, cost(b1=0.088, b3=0.1)).skipped([*both, reader]) == set()  # all of them, or none
    # Too dear for all to ride along; the assistant's row (1.24x a frame a step) the announcement's 0.5 s in hand
    # still covers over its 1.8 s to make (0.43 s), the reader with slack waits.
    assert policy(time, cost(b1=0.088, b3=0.11)).skipped([*both, reader]) == {3}
    # The announcement's own plan (its first chunk's hold) counts the riders' rows: batch_for.
    fresh = PlaybackClock(text_length=lambda: 40)
    waiting = seq_with(4, fresh)
    assert policy(time, cost(b1=0.088, b2=0.096)).batch_for(waiting, [waiting, assistant]) == 2
    assert policy(time, cost(b1=0.088, b2=0.11)).batch_for(waiting, [waiting, assistant]) == 1
    # Not while the codec falls behind the rooms it owes audio: the riders' frames would queue before the
    # announcement's blocks.
    codec.rooms = frozenset(range(6))
    assert policy(time, cost(b1=0.088, b2=0.096)).skipped(both) == {2}
    assert policy(time, cost(b1=0.088, b2=0.096)).batch_for(waiting, [waiting, assistant]) == 1


def test_a_low_slack_reply_joins_an_announcements_steps_where_its_audio_in_hand_covers_the_row():
    """Two rooms: an announcement just out and an assistant's reply with half a second left. A step of both a little
    slower than real time still plays the announcement whole (its audio in hand covers the shortfall over what it has
    to make): the assistant is not cut. Much slower, or with little in hand, or while a first sound waits, it is."""
    time = Time()
    codec = codec_owing(2)

    def policy(time: Time, step_cost: StepCost) -> PlaybackPolicy:
        return PlaybackPolicy(PlaybackLimits(0.0, 1.0, 4.0), step_cost, FRAME, now=time, codec=codec)

    clock = PlaybackClock(text_length=lambda: 40)  # ~2.8 s of audio by its text
    clock.wrote(0.64, now=time.now - 0.4)  # 0.24 s in hand, 2.16 s to make
    announcement = seq_with(1, clock)
    assistant = seq_with(2, listener(time, written=6.0, played=5.5))  # 0.5 s left: low slack
    both = [announcement, assistant]
    assert policy(time, cost(b1=0.06, b2=0.086)).skipped(both) == set()  # 0.16 s behind over 2.16 s: covered
    assert policy(time, cost(b1=0.06, b2=0.1)).skipped(both) == {2}  # 0.54 s behind: the announcement keeps its steps
    thin = PlaybackClock(text_length=lambda: 40)
    thin.wrote(0.32, now=time.now - 0.3)  # 0.02 s in hand
    assert policy(time, cost(b1=0.06, b2=0.086)).skipped([seq_with(3, thin), assistant]) == {2}
    new = seq_with(4, PlaybackClock())  # a new reply waits for its first audio: real time only
    assert policy(time, cost(b1=0.06, b2=0.086, b3=0.1)).skipped([*both, new]) == {1, 2}
    codec.rooms = frozenset(range(6))  # the codec falls behind: the assistant's blocks would go before its own
    assert policy(time, cost(b1=0.06, b2=0.086)).skipped(both) == {2}


def test_while_a_reply_waits_for_its_first_audio_other_head_starts_join_only_in_real_time():
    time = Time()
    slow = cost(b1=0.07, b2=0.09)  # two in a step is slower than real time
    new = seq_with(1, PlaybackClock())
    starting = seq_with(2, listener(time, written=1.0, played=0.5))
    later = seq_with(3, listener(time, written=3.0, played=2.0))
    assert policy(time, slow).skipped([starting, later, new]) == {2, 3}
    fits_two = cost(b1=0.03, b2=0.05, b3=0.09)  # one joins: the one with the least audio written
    assert policy(time, fits_two).skipped([later, starting, new]) == {3}
    assert policy(time).skipped([starting, later, new]) == set()  # nothing measured yet: nobody is cut
    # A request without a listener hurries nobody out of a step; nor does a new reply once it has audio.
    assert policy(time, slow).skipped([starting, later, seq_with(4, None)]) == set()
    new.clock.wrote(0.32, now=time.now)
    assert policy(time, slow).skipped([starting, later, new]) == set()


def test_the_policy_keeps_each_requests_tier_for_the_sat_out_counter():
    time = Time()
    slow = cost(b1=0.05, b2=0.07, b3=0.09)
    new = seq_with(1, PlaybackClock())
    starting = seq_with(2, listener(time, written=1.0, played=0.5))
    behind = seq_with(3, listener(time, written=60.0, played=59.5))
    some = seq_with(4, listener(time, written=30.0, played=28.0))
    full = seq_with(5, listener(time, written=30.0, played=20.0))
    offline = seq_with(6, None)
    p = policy(time, slow)
    assert p.skipped([new, starting, behind, some, full, offline]) == {2, 3, 4, 5}
    assert p.tiers == {1: "first", 2: "head_start", 3: "low_slack", 4: "slack", 5: "full", 6: "first"}
    assert p.skipped([full]) == set() and p.tiers == {}  # alone: nothing to trade, nothing classified


def test_a_short_reply_keeps_its_head_start_through_a_hiccup_but_not_through_a_gap():
    """A 30 ms silence (one late step) is forgiven; a 0.3 s one is heard, and the reply gives the step back."""
    from wyoming_chorus.engine.playback_policy import SHORT_REPLY_GAP_TOLERANCE_SECONDS
    time = Time()
    slow = cost(b1=0.05, b2=0.07, b3=0.09)  # three in a step is slower than real time

    def short_reply(seq_id: int, silence: float):
        clock = PlaybackClock(text_length=lambda: 40)  # ~2.8 s of audio by its text: short
        clock.wrote(0.5, now=time.now - 0.9 - silence)
        clock.wrote(0.5, now=time.now - 0.4)  # ran dry for `silence` before this chunk
        return seq_with(seq_id, clock)

    hiccup, broken = short_reply(2, 0.03), short_reply(3, 0.3)
    assert hiccup.clock.underruns == broken.clock.underruns == 1
    assert hiccup.clock.underrun_seconds <= SHORT_REPLY_GAP_TOLERANCE_SECONDS < broken.clock.underrun_seconds
    reader = seq_with(4, listener(time, written=60.0, played=59.5))  # urgent: 0.5 s left
    p = PlaybackPolicy(PlaybackLimits(0.0, 1.0, 4.0), slow, FRAME, now=time)  # HA 2026.11's default: no head start
    p.skipped([hiccup, broken, reader, seq_with(1, PlaybackClock())])
    assert p.tiers[2] == "head_start" and p.tiers[3] != "head_start"


def test_the_codec_holds_no_block_of_the_only_short_reply_even_after_a_gap():
    """The only short reply running keeps its head start through gaps (PlaybackPolicy.in_first_seconds), at the
    codec too: while the engine runs its steps, its own blocks must not wait for them (a reader's may)."""
    import time as clocks
    time = Time()
    time.now = clocks.monotonic()  # the codec asks the clocks at the real time
    clock = PlaybackClock(text_length=lambda: 40)  # ~2.8 s of audio by its text: short
    clock.wrote(0.5, now=time.now - 1.2)
    clock.wrote(2.0, now=time.now - 0.4)  # ran dry for 0.3 s before this chunk: past the tolerance; 1.6 s left
    announcement = seq_with(2, clock)
    reader = seq_with(3, listener(time, written=60.0, played=50.0))
    pacing = paced(PlaybackPolicy(PlaybackLimits(0.0, 1.0, 4.0), cost(b1=0.05, b2=0.07), FRAME, now=time))
    pacing.skipped([announcement, reader])
    pacing.mark([announcement, reader])
    held = pacing.held_back_now()
    assert pacing.urgent.level == HEAD_START
    assert not held(announcement.clock) and held(reader.clock)


def test_a_reply_silent_for_a_head_start_gets_one_again():
    time = Time()
    slow = cost(b1=0.07, b2=0.09)
    starved = seq_with(2, listener(time, written=30.0, played=36.0))  # its listener has heard nothing for 6 s
    new = seq_with(1, PlaybackClock())
    assert policy(time, slow).skipped([new, starved]) == set()


def test_the_codec_level_of_a_step_is_its_most_urgent_reply():
    """FIRST_AUDIO when a reply in the step has no audio yet, HEAD_START when one has less than head_start_seconds,
    QUIET otherwise (a request without a listener hurries nobody)."""
    time = Time()
    new = seq_with(1, PlaybackClock())
    starting = seq_with(2, listener(time, written=2.0, played=1.0))
    reader = seq_with(3, listener(time, written=20.0, played=10.0))
    offline = seq_with(4, None)
    p = policy(time)
    assert codec_level(p, [reader, starting, new]) == FIRST_AUDIO
    assert codec_level(p, [reader, starting]) == HEAD_START
    assert codec_level(p, [reader, offline]) == QUIET
    assert codec_level(p, []) == QUIET


# ---- in the scheduler -------------------------------------------------------------------------------------------

def test_a_request_sitting_out_keeps_its_blocks_and_place_and_later_runs_to_its_end():
    time = Time()
    blocks = BlockManager(64, 4)
    sched = Scheduler(blocks, 4, 8, 64, pacing=paced(policy(time)))
    rec = Recorder(sched, FakeRunner(blocks, eos_at={1: 6, 2: 6}))
    reader, new = seq_with(1, listener(time, written=20.0, played=5.0)), seq_with(2, PlaybackClock())
    sched.add(reader)
    sched.add(new)
    entries, _ = rec.step()  # both prefill: nobody has audio from this engine yet
    assert [e.seq.id for e in entries] == [1, 2]
    held = list(reader.block_table)
    for _ in range(3):
        entries, _ = rec.step()
        assert [e.seq.id for e in entries] == [2]  # the reader has 15 s buffered: it sits out
        assert reader.block_table == held and reader in sched.running
        assert sched.sat_out == [reader]
    reader.clock = listener(time, written=20.0, played=19.5)  # its listener has caught up
    rec.run()
    rec.assert_frames(1, 6)
    rec.assert_frames(2, 6)
    assert blocks.num_used == 0


def test_a_new_replys_prompt_runs_without_the_decodes_its_next_steps_would_cut():
    time = Time()
    blocks = BlockManager(64, 4)
    slow = cost(b1=0.07, b2=0.09)  # two in a step is slower than real time
    sched = Scheduler(blocks, 4, 8, 64, pacing=paced(policy(time, slow)))
    rec = Recorder(sched, FakeRunner(blocks, eos_at={1: 8, 2: 3}))
    starting = seq_with(1, None)
    sched.add(starting)
    rec.step()
    starting.clock = listener(time, written=2.0, played=1.0)  # heard, still in its first 5 s
    new = seq_with(2, PlaybackClock())
    sched.add(new)
    entries, _ = rec.step()
    assert [e.seq.id for e in entries] == [2]  # its prompt alone: the reader would be cut from its next step
    assert starting in sched.running and starting.block_table
    entries, _ = rec.step()
    assert [e.seq.id for e in entries] == [2]
    new.clock.wrote(0.32, now=time.now)  # its first audio: the reader rides again
    entries, _ = rec.step()
    assert sorted(e.seq.id for e in entries) == [1, 2]
    rec.run()
    rec.assert_frames(1, 8)
    rec.assert_frames(2, 3)
    assert blocks.num_used == 0


class PlaybackMachine(RuleBasedStateMachine):
    """Requests arrive, the loop writes each frame's audio as it is made, time passes, steps run. Blocks and
    accounting stay exact after every step; a reply with no audio yet, or silent for a head start, always runs; one
    in its head start sits out only while another waits for its first audio; and once arrivals stop, every request
    runs to its end."""

    @initialize(max_running=st.integers(1, 4), slow=st.booleans())
    def setup(self, max_running, slow):
        self.time = Time()
        self.blocks = BlockManager(48, 4)
        measured = cost(b1=0.05, b2=0.07, b3=0.09, b4=0.11) if slow else cost(b1=0.02, b4=0.03)
        self.policy = policy(self.time, measured)
        self.sched = Scheduler(self.blocks, max_running, 16, 64, pacing=paced(self.policy))
        self.rec = Recorder(self.sched, FakeRunner(self.blocks, eos_at={}))
        self.next_id = 1
        self.frames_wanted: dict[int, int] = {}

    @rule(frames=st.integers(1, 40), paced=st.booleans())
    def arrive(self, frames, paced):
        seq = seq_with(self.next_id, PlaybackClock() if paced else None)
        self.rec.runner.eos_at[seq.id] = frames
        if self.sched.add(seq):
            self.frames_wanted[seq.id] = frames
        self.next_id += 1

    @rule(seconds=st.sampled_from([0.0, 0.05, 0.3, 2.0, 7.0]))
    def time_passes(self, seconds):
        self.time.now += seconds

    @rule()
    def step(self):
        before = list(self.sched.running)
        entries, result = self.rec.step()
        ran = {e.seq.id for e in entries}
        batch = before + [e.seq for e in entries if e.seq not in before]  # with the requests that joined
        first_audio_waits = any(s.clock is not None and s.clock.written == 0 for s in batch)
        must_run = [s.id for s in before if self._always_runs(s) or (not first_audio_waits and s.clock.written < 5.0)]
        assert set(must_run) <= ran | {s.id for s in self.sched.preempted}, "a head start sat a step out"
        for seq, _ in result.new_frames:  # the loop writes each frame's audio as soon as it is made
            if seq.clock is not None:
                seq.clock.wrote(FRAME, now=self.time.now)
        self.time.now += FRAME / 2

    def _always_runs(self, seq) -> bool:
        """No listener, no audio yet, or silent for a head start."""
        if seq.clock is None:
            return True
        slack = seq.clock.slack(self.time.now)
        return slack is None or slack < -5.0

    @invariant()
    def books_balance(self):
        if hasattr(self, "sched"):
            self.sched.check_integrity()

    def teardown(self):
        if not hasattr(self, "sched"):
            return
        for _ in range(3000):  # arrivals have stopped: everyone ends, and the pool is whole again
            if not self.sched.has_work():
                break
            self.step()
        assert not self.sched.has_work(), "a request never finished"
        for seq_id, frames in self.frames_wanted.items():
            assert len(self.rec.delivered.get(seq_id, [])) == frames
        assert self.blocks.num_used == 0


TestPlaybackMachine = PlaybackMachine.TestCase
TestPlaybackMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None, derandomize=True)
