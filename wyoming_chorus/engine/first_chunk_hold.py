"""How long a reply's first chunk waits at the writer so that the reply then plays with no gap (scheduler.policy
playback; Home Assistant 2026.11 plays the server's audio as it comes, and every moment it falls behind is a gap).

From the moment its first chunk is ready, a reply with `made` seconds of audio made and `rest` seconds still to make at
`rate` seconds of audio per second, played at 1x from `hold` seconds later, never runs dry iff made + rate*t >= t - hold
for every t up to rest/rate, i.e. hold >= rest * (1/rate - 1) - made. Where the rate is 1 or more no hold is needed. The
audio reaches the listener in whole decoder blocks, though, so at any moment up to a block of what is made has not
reached it yet: `made` counts only what is made past the first block (the one that plays first). Counted whole, one 3.2
s announcement at RTF 1.1 was planned no hold once its first block was made, and each block then came a step late: 7
gaps, 0.23 s. A hold that would put the first chunk past scheduler.max_first_audio_seconds after the reply began (a
Voice PE gives up when it hears nothing 2 s after it gets the URL) buys nothing gap-free: the chunk goes out at once
(playback_clock.PlaybackClock.release_at), since a shorter wait only moves silence from inside the reply to before it,
and the first sound is what a household feels most.

The rate is that of a request that takes every step of the batch it will be made in (`batch_of`, the playback
policy's): for a short reply, which is a head start once out, the replies that go before or beside it, and the others
only while the step stays real time (past the box's capacity it is made nearly alone: planned at all running it got a
hold too long to keep, and gapped); for a long one all running requests, the cautious batch. A step of that batch
comes round every loop period (engine/loop_periods.py: the typical period where the loop ran that size lately, else
the StepCost's step scaled as the loop's periods exceed it): the runner's step alone is faster than what a room gets
(0.6b on 2 cores: 72 against 89 ms at batch 1, a hold from it too short for one room at RTF 1.13). Its audio must also
come through the codec thread, which decodes one room's block at a time (engine/codec_load.py): once the codec has a
figure, a reply among N rooms it decodes for gets at most 1 / (N x its seconds per audio second), and the rate is the
lower of the two. Where the codec is the slower part (f32 on AVX2: ~0.45 s per audio second, so three rooms get 0.74
s of audio a second each) a hold from the steps alone would be 0 and the reply would gap. N counts every room the
codec still owes audio, not only the batch's: with a slow codec a reply's frames are all made long before it has been
heard, and its room takes the codec's time until then. Also cautious: while a reply's first chunk is held the codec
serves its blocks first (no audio out yet), so it gets more than its share then.
The length is the reply's expected audio from its text so far (SECONDS_PER_CHARACTER), or without it its sentence's
(`expected_frames`). A streamed reply's text is still coming in when its first chunk is ready (the bench's 20 s reply:
13 s of it in hand at 0.35 s of text a second), so the hold is planned again at every step while the chunk waits at the
writer, from that moment on, and the writer reads the latest plan: a hold planned too short on the first sentence
grows as the rest arrives, up to the same latest first sound.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable

from .codec_load import CodecLoad
from .loop_periods import LoopPeriods
from .sequence import Sequence
from .step_cost import StepCost

# The batch a reply not yet heard will be made in, given all running requests (PlaybackPolicy.batch_for).
BatchOf = Callable[[Sequence, list[Sequence]], int]


def all_running(seq: Sequence, running: list[Sequence]) -> int:
    return len(running)

# Frames of speech per text row (token) of a sentence: ~5 frames a word at 2.5 words/s and 12.5 frames/s, ~1.3 tokens
# a word in English, and a little over, since a longer guess only plans a longer hold. A sentence's frame cap
# (a benchmark's exact length, a real model's bound) caps it.
FRAMES_PER_TEXT_ROW = 4.0
# Seconds of speech per character of a reply's text: ~2.5 words a second, ~5.6 characters a word with its space
# (English; a language with denser script is guessed shorter than it is spoken).
SECONDS_PER_CHARACTER = 0.07


def expected_frames(seq: Sequence) -> float:
    """Frames the sentence is expected to take, from its text so far."""
    return min(float(seq.frame_cap), FRAMES_PER_TEXT_ROW * len(seq.trailing_text))


def hold_seconds(rest: float, made: float, rate: float | None) -> float:
    """The shortest hold before the first chunk that plays the sentence with no gap; 0.0 when the rate is unknown
    or real time (>= 1), infinite when nothing is being made."""
    if rate is None or rate >= 1.0 or rest <= 0:
        return 0.0
    if rate <= 0:
        return math.inf
    return max(0.0, rest * (1.0 / rate - 1.0) - made)


class FirstChunkHold:
    def __init__(self, cost: StepCost, frame_seconds: float, max_first_audio_seconds: float,
                 codec: CodecLoad | None = None, periods: LoopPeriods | None = None, batch_of: BatchOf = all_running,
                 block_seconds: float = 0.0):
        """`max_first_audio_seconds`: the latest a hold may put a reply's first chunk, after the reply began (0: no
        hold). `codec`: what the codec thread measures of itself (None: the steps' rate alone). `periods`: the engine
        loop's (None: the StepCost's steps alone). `batch_of`: the batch a reply will be made in (default: all
        running). `block_seconds`: the audio of one decoder block (the listener gets the audio in such blocks)."""
        self.cost = cost
        self.frame_seconds = frame_seconds
        self.max_first_audio_seconds = max_first_audio_seconds
        self.codec = codec or CodecLoad()
        self.periods = periods
        self.batch_of = batch_of
        self.block_seconds = block_seconds

    def rate(self, batch: int, codec_rooms: int | None = None) -> float | None:
        """Seconds of audio per second for a request that takes every step of `batch` and shares the codec with
        `codec_rooms` rooms in all (None: the batch's); None before any step."""
        step = self.cost.predict(batch) if self.periods is None else self.periods.period(batch, self.cost)
        if step is None or step <= 0:
            return None
        steps_rate = self.frame_seconds / step
        codec_rate = self.codec.rate_per_room(batch if codec_rooms is None else codec_rooms)
        return steps_rate if codec_rate is None else min(steps_rate, codec_rate)

    def plan(self, running: list[Sequence], now: float | None = None) -> None:
        """Before each step: the hold of every reply whose first chunk has not gone out yet, at its writer or not
        (its first sentence only; a deferred one is made ahead of need and comes after). `now`: the clocks' time."""
        if self.max_first_audio_seconds <= 0:
            return
        waiting = [(seq, clock) for seq in running
                   if (clock := seq.clock) is not None and not seq.deferred and clock.written == 0]
        if not waiting:
            return
        # The rooms sharing the codec: the batch's (one without a listener counts too: cautious) and those whose
        # frames are all made but whose audio the codec still owes.
        listeners = {id(seq.clock) for seq in running if seq.clock is not None}
        codec_rooms = max(len(running), len(listeners | self.codec.rooms))
        rates: dict[int, float | None] = {}  # by batch: the replies planned together mostly share one
        for seq, clock in waiting:
            batch = self.batch_of(seq, running)
            if batch not in rates:
                rates[batch] = self.rate(batch, codec_rooms)
            rate = rates[batch]
            made = len(seq.frames) * self.frame_seconds
            reply = clock.expected_seconds(SECONDS_PER_CHARACTER)  # the whole reply, when its writer says its text
            expected = expected_frames(seq) * self.frame_seconds if reply is None else reply
            rest = max(0.0, expected - made)
            ahead = max(0.0, made - self.block_seconds)  # made past the first block: what the listener has in hand
            hold = hold_seconds(rest, ahead, rate)
            if clock.first_ready is not None:  # the chunk waits at the writer already: the hold runs from now on
                hold += (time.monotonic() if now is None else now) - clock.first_ready
            clock.plan_hold(hold, clock.began + self.max_first_audio_seconds)
