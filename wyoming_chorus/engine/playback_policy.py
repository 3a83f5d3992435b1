"""Which running requests take the next step, from each reply's playback clock (scheduler.policy: playback).

A listener hears a reply at 1x from its first chunk: Home Assistant 2026.11 plays the server's audio 0.1-0.5 s after
it comes (2026.2's conversion held the first ~4.3 s; `head_start_seconds` still serves such a client). So the first
block goes out as soon as it is made, and from then on the goal is no gap. Each step the running requests are taken
in this order, while the step's cost allows:

1. *first*: no audio out yet (its first chunk not yet at the writer, or held there: engine/first_chunk_hold.py);
   with `head_start_seconds` > 0, also a reply silent that long (it starts over, so none starves);
2. *head start*: a short reply (at most SHORT_REPLY_SECONDS left to make, by its text) heard with no gap so far
   (SHORT_REPLY_GAP_TOLERANCE_SECONDS of silence forgiven; any, when it is the only reply running that is short
   as a whole: an announcement, not a long reply's last seconds),
   or with `head_start_seconds` > 0 one with less than that written; the least audio written first;
3. *low slack*: less than `min_slack_seconds` of audio left to play, the reply with the least audio delivered first;
4. the rest, least slack first. One with more than `max_slack_seconds` left skips the step (keeping its blocks and
   its place in the batch): it gives its step to those that would otherwise fall behind.
   Where more than one listener is running, a reply's next sentence made ahead of need (deferred, until its
   listener reaches it) comes last of all, taking only steps to spare: it shares the clock of the sentence heard
   now, and ranked by that clock it took a row beside it from the first step (an announcement's two sentences were
   two head starts, so on a box near its capacity the step of both was slower than real time, and the readers rode
   along). A lone listener's next sentence still runs beside the one heard: there it is ready when its turn comes,
   and left for steps to spare it started late at every sentence (one room slower than real time: more gaps).

The batch is cut where one more request would make the step slower than real time (a frame's duration per step, from the
learned StepCost). Replies with no audio out yet always run. While one of them waits for its first block (not one whose
block is out and held), head starts and low-slack replies join only while the step stays real time: a new reply's
listener hears nothing, a Voice PE gives up after ~2 s, and the pause lasts a prompt and one decoder block's frames.
Otherwise head starts always run, and low-slack replies too (beside a head start, or a short reply whose first chunk is
held, only while the step stays real time, or where each head start's audio in hand covers what the slower step
loses it over the audio it still has to make, or where the head starts are slower than real time even on their own
and a step of all costs at most RIDE_ALONG_SLOWDOWN more than theirs: they gap anyway, and a cut would starve the
others for little): past the box's capacity every reply that would fall behind runs, the most
audio per step. The rest join while the step stays real time, and past that while one more row adds frames per
second (its cost below the step's cost per row) unless a reply waits for its first audio or has a head start: with
nobody's first sound or announcement at stake, cutting them only traded their slack for a shorter step that makes
less audio in all. When that leaves nothing to run, every request that is not full runs (an idle box has nothing to
save). Requests without a clock (synth, the benchmarks) have no listener to pace: they always run, like a reply with
no audio yet, but hurry nobody out of a step.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from wyoming_chorus.playback_clock import PlaybackClock

from .codec_load import CodecLoad
from .first_chunk_hold import SECONDS_PER_CHARACTER
from .sequence import Sequence
from .step_cost import StepCost

# The tiers above, each step; the last four name the label of chorus_playback_sat_out_total (FIRST always runs).
FIRST, HEAD_START, LOW_SLACK, SLACK, FULL = "first", "head_start", "low_slack", "slack", "full"
TIERS = (FIRST, HEAD_START, LOW_SLACK, SLACK, FULL)


# A reply whose text leaves at most this much audio to make, heard with no gap so far, has a head start: an
# announcement (5-15 words) is, an assistant's reply or a read-out is not until its last seconds.
SHORT_REPLY_SECONDS = 8.0
# The silence a short reply may have had and keep its head start. A gap of a few tens of milliseconds (one step that
# came late, a stall of the cores) is not what loses a reply: a satellite's own buffer of 0.1 s or more covers most of
# it, and taking the reply's head start away for it turns that hiccup into seconds of gaps. Past this it has
# audibly broken up, and (too many short ones at once) it gives the step back.
SHORT_REPLY_GAP_TOLERANCE_SECONDS = 0.1
# Where even the replies a step is owed to (head starts) are made slower than real time on their own, no cut keeps
# them whole, and where the step with every other reply in it costs at most this fraction more than theirs alone (and
# the codec keeps up with every room it owes audio), the others ride along. A row costs a streaming CPU a few
# percent of a step (0.6b INT8 on 2 Zen 4 cores: ~6 ms on 68), so at two rooms an assistant's reply is made beside
# an announcement instead of waiting out the announcement's seconds (that burst made 0.86x FCFS's audio, with more
# gaps); among seven readers the step would grow ~1.6x, and the announcement keeps its steps. Without the codec's
# condition, an announcement among seven readers playing their replies gapped more in its worst probes (3.0-4.6 s
# against 1.6-2.5 s): the riders' frames queued at the codec before its blocks.
RIDE_ALONG_SLOWDOWN = 0.15


def short_reply(clock: PlaybackClock) -> bool:
    """At most SHORT_REPLY_SECONDS of audio left to make, by its text."""
    expected = clock.expected_seconds(SECONDS_PER_CHARACTER)
    return expected is not None and expected - clock.written <= SHORT_REPLY_SECONDS


def short_and_whole(clock: PlaybackClock) -> bool:
    """A short reply (by its text) whose listener has heard no gap yet, or one within the tolerance: past the box's
    capacity, running it first is what keeps it whole. One that gaps anyway (too many short ones at once) loses its
    head start once its gaps pass the tolerance, so the head starts never keep the box below its full batch for long
    (but see PlaybackPolicy.in_first_seconds: not the only short one)."""
    return clock.underrun_seconds <= SHORT_REPLY_GAP_TOLERANCE_SECONDS and short_reply(clock)


def short_whole_reply(clock: PlaybackClock) -> bool:
    """The whole reply is short by its text (an announcement), not only the last seconds of a long one."""
    expected = clock.expected_seconds(SECONDS_PER_CHARACTER)
    return expected is not None and expected <= SHORT_REPLY_SECONDS


def lone_short_reply(running: list[Sequence]) -> PlaybackClock | None:
    """The listener of the one reply among the running requests that is short as a whole, if only one is. Not a long
    reply in its last seconds: past the box's capacity such a tail has gapped long before, and given the steps as the
    only short reply it ran nearly alone while the others starved (0.6b INT8 on Zen 4, mixed burst of 8: the
    assistants' tails one after another, 1.25-1.36 audio s per s against FCFS's 2.07-2.21, and more gaps)."""
    # By listener, not by sequence: a reply's sentences share its clock, and the next one runs beside the one heard
    # (an announcement of two sentences counted twice lost its head start at its second: 8.4-8.9 s of gaps among
    # seven readers against 0.3-1.9 s for one sentence).
    short = {id(seq.clock): seq.clock for seq in running if seq.clock is not None and short_whole_reply(seq.clock)}
    return next(iter(short.values())) if len(short) == 1 else None


def more_than_one_listener(running: list[Sequence]) -> bool:
    """Requests of more than one listener are running (a request without one counts as one of its own)."""
    return len({id(seq.clock) if seq.clock is not None else -seq.id - 1 for seq in running}) > 1


@dataclass(frozen=True)
class PlaybackLimits:
    head_start_seconds: float = 0.0
    min_slack_seconds: float = 1.0
    max_slack_seconds: float = 4.0


class PlaybackPolicy:
    def __init__(self, limits: PlaybackLimits, cost: StepCost, frame_seconds: float,
                 now: Callable[[], float] = time.monotonic, codec: CodecLoad | None = None):
        """`now`: the clock the playback clocks were written with (tests script it). `codec`: what the codec thread
        measures of itself (None: nobody rides along)."""
        self.limits = limits
        self.cost = cost
        self.codec = codec
        self.frame_seconds = frame_seconds
        self._now = now
        self.tiers: dict[int, str] = {}  # request id -> its tier at the last skipped()
        # The only short reply's listener (lone_short_reply), as the engine thread last looked; read by the codec
        # thread too (has_head_start), without a lock: one reference replaced whole.
        self._lone_short: PlaybackClock | None = None
        self._company = False  # more than one listener among the running requests, as the engine thread last looked

    def skipped(self, running: list[Sequence]) -> set[int]:
        """Ids of the running requests that sit this step out. The tier each running request was found in is kept
        in `tiers` (by id) until the next call, for chorus_playback_sat_out_total."""
        self.tiers = {}
        self._lone_short = lone_short_reply(running)
        self._company = more_than_one_listener(running)
        if len(running) < 2 or all(seq.clock is None for seq in running):
            return set()  # nothing to trade: one request, or none with a listener to pace
        now = self._now()
        by_tier: dict[str, list[tuple[float, Sequence]]] = {tier: [] for tier in TIERS}
        for seq in running:
            tier, order = self._tier(seq, now)
            by_tier[tier].append((order, seq))
            self.tiers[seq.id] = tier
        first = [seq for _, seq in by_tier[FIRST]]
        head, low, rest = (sorted(by_tier[tier], key=lambda item: item[0]) for tier in (HEAD_START, LOW_SLACK, SLACK))
        someone_waits_for_first_audio = any(self.waits_for_first_audio(seq) for seq in first)
        # A short reply whose first chunk is held at its writer is a head start to come: its hold was planned on the
        # steps it gets as one (first_chunk_hold.py), so low-slack replies do not take them meanwhile.
        head_start_held = any(seq.clock is not None and short_and_whole(seq.clock) for seq in first)
        chosen = list(first)
        for _, seq in head:
            if not someone_waits_for_first_audio or self._real_time(len(chosen) + 1):
                chosen.append(seq)
        # Head starts made slower than real time even on their own gap whatever the cut: where all the others cost
        # their step little, they ride along.
        owed = len(chosen)
        ride_along = ((bool(head) or head_start_held) and not someone_waits_for_first_audio and owed > 0
                      and not self._real_time(owed) and self._rides_along(owed + len(low) + len(rest), owed))
        heads = [seq for seq in chosen if seq.clock is not None]
        for _, seq in low:
            if (ride_along or not (someone_waits_for_first_audio or head or head_start_held)
                    or self._real_time(len(chosen) + 1)
                    or (not (someone_waits_for_first_audio or head_start_held)
                        and self._in_hand_covers(len(chosen) + 1, heads, now))):
                chosen.append(seq)
        # Past real time a reply with slack still joins where its row adds frames per second, unless the step's speed
        # is owed to a first sound or a head start (an announcement made nearly alone among readers).
        step_owed = someone_waits_for_first_audio or bool(head) or head_start_held
        for _, seq in rest:
            if (ride_along or self._real_time(len(chosen) + 1)
                    or (not step_owed and self._adds_throughput(len(chosen) + 1))):
                chosen.append(seq)
        if not chosen:  # no head start, no low slack, and not even one more fits in real time: run all that can
            chosen = [seq for _, seq in rest] or [seq for _, seq in by_tier[FULL]]
        ids = {seq.id for seq in chosen}
        return {seq.id for seq in running if seq.id not in ids}

    def batch_for(self, seq: Sequence, running: list[Sequence]) -> int:
        """The batch `seq`, not yet heard, will be made in from its first chunk on: for a short one (a head start
        once out), the replies that go before it or beside it (no audio yet, head starts) and the others only while
        the step stays real time; past the box's capacity that is far fewer than all running. For a long one all
        running: the cautious batch (low-slack replies join its steps)."""
        if seq.clock is None or not short_and_whole(seq.clock):
            return len(running)
        self._lone_short = lone_short_reply(running)
        self._company = more_than_one_listener(running)
        now = self._now()
        tiers = [self._tier(other, now)[0] for other in running]
        ahead = max(sum(tier in (FIRST, HEAD_START) for tier in tiers), 1)
        wanting = sum(tier != FULL for tier in tiers)  # those with slack to spare sit out anyway
        if not self._real_time(ahead) and self._rides_along(wanting, ahead):
            return wanting  # the others ride along (skipped)
        batch = ahead
        while batch < len(running) and self._real_time(batch + 1):
            batch += 1
        return batch

    def _tier(self, seq: Sequence, now: float) -> tuple[str, float]:
        """The request's tier this step, and its order within it (lower goes first)."""
        if seq.clock is None:
            return FIRST, 0.0
        limits = self.limits
        slack = seq.clock.slack(now)
        if seq.deferred and self._company:  # made ahead of need, beside other listeners (see the top)
            return (FULL, slack) if slack is not None and slack > limits.max_slack_seconds else (SLACK, math.inf)
        if slack is None or 0 < limits.head_start_seconds < -slack:
            return FIRST, 0.0
        if self.in_first_seconds(seq):
            return HEAD_START, seq.clock.written
        if slack < limits.min_slack_seconds:
            return LOW_SLACK, seq.clock.written
        if slack > limits.max_slack_seconds:
            return FULL, slack
        return SLACK, slack

    def waits_for_first_audio(self, seq: Sequence) -> bool:
        """Its listener has heard nothing of the reply yet and its first block has not reached the writer (one held
        there waits for its own listener's sake, not for the engine)."""
        return seq.clock is not None and seq.clock.written == 0 and seq.clock.first_ready is None

    def in_first_seconds(self, seq: Sequence) -> bool:
        """It has a head start: its listener waits for the reply's first head_start_seconds (fewer written so far),
        or it is a short reply heard with no gap so far (`short_and_whole`), or the only reply running that is short
        as a whole (`lone_short_reply`: an announcement, not a long reply's last seconds), gaps or not; False without
        a listener. The gap tolerance is for too many short ones at once: one alone that gaps
        does so because the box is slower than real time even for it (or a stall of the cores), and sharing the
        readers' steps then only gaps it more (a lone announcement 0.12 s behind at RTF 1.1 went on at batch 8: 0.5-1.2
        s more), while it keeps them out for at most SHORT_REPLY_SECONDS."""
        return seq.clock is not None and self.has_head_start(seq.clock)

    def has_head_start(self, clock: PlaybackClock) -> bool:
        """in_first_seconds for a listener: the codec thread asks it of the listener whose block is next."""
        return clock.written < self.limits.head_start_seconds or short_and_whole(clock) or clock is self._lone_short

    def _in_hand_covers(self, batch: int, heads: list[Sequence], now: float) -> bool:
        """A step of `batch`, slower than real time, still plays every head start in `heads` whole: the audio its
        listener has in hand covers what it falls behind over the audio it still has to make at that step's pace. A
        short reply just out has a block or so in hand, and the step's cost counts the codec's blocks beside it (a
        wall time), so near real time a second room's row costs the announcement little: 0.6b INT8 on 2 Zen 4 cores,
        an assistant's reply beside a 3 s announcement, two rows a little over a frame's duration a step by the
        learned cost: cut, the assistant sat out the announcement's 2 s (a 1.7 s gap) while the announcement's slack
        grew 0.2 -> 0.56 s; FCFS, running both, held both."""
        cost = self.cost.predict(batch)
        if cost is None or not heads or not self._codec_keeps_up():
            return False
        behind_per_second = cost / self.frame_seconds - 1.0
        for seq in heads:
            clock = seq.clock
            assert clock is not None
            slack = clock.slack(now)
            expected = clock.expected_seconds(SECONDS_PER_CHARACTER)
            if slack is None or expected is None or slack < (expected - clock.written) * behind_per_second:
                return False
        return True

    def _adds_throughput(self, batch: int) -> bool:
        """A step of `batch` makes more frames per second than one of batch - 1: on a CPU whose step streams the
        weights once for every row (batch 1 to ~8 here), nearly always; where the arithmetic grows with each row, not.
        (On 2 Zen 4 cores, 0.6b INT8, bursts of 2 and 3 long replies: cutting at real time made 1.01 and 1.25-1.28 audio
        s per s against FCFS's 1.18-1.21 and 1.45-1.52, with more gaps.)"""
        if batch < 2:
            return True
        more, fewer = self.cost.predict(batch), self.cost.predict(batch - 1)
        return more is None or fewer is None or more / batch < fewer / (batch - 1)

    def _rides_along(self, batch: int, owed: int) -> bool:
        """A step of `batch` costs at most RIDE_ALONG_SLOWDOWN more than one of the `owed` rows alone, and the codec
        makes every room it owes audio in real time (False while any of it is unknown)."""
        more, alone = self.cost.predict(batch), self.cost.predict(owed)
        if more is None or alone is None or more > alone * (1.0 + RIDE_ALONG_SLOWDOWN):
            return False
        return self._codec_keeps_up()

    def _codec_keeps_up(self) -> bool:
        """The codec makes every room it owes audio in real time (False before it was measured, or without one): a
        reply that joins a head start's steps then does not queue its blocks before the head start's."""
        if self.codec is None:
            return False
        rooms = len(self.codec.rooms)
        held = self.codec.rooms_held(rooms)
        return held is not None and held >= rooms

    def _real_time(self, batch: int) -> bool:
        # The language models' step alone, not the codec's share (CodecLoad), unlike the first-chunk hold's rate: the
        # cut trades steps, and a request that sits a step out still holds its place at the codec (its frames made
        # already are still owed audio), so cutting the batch does not make the codec faster for anyone. Where the
        # codec is the slower part it already serves the listeners in need first (no audio yet, then least slack:
        # engine/audio_output.py); a cut from its cost would only take steps from replies the engine can still make
        # in time, their frames then late at the codec too.
        cost = self.cost.predict(batch)
        return cost is None or cost <= self.frame_seconds

