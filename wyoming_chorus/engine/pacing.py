"""The playback policy in one object (scheduler.policy), which the engine owns and hands to the scheduler and the codec.

A reply is paced by its listener's playback clock in three places, which must agree, so they ask one object:

- the scheduler: which running requests sit the next step out (playback_policy.py: who takes each step), and how
  long each new reply's first chunk waits at its writer to then play with no gap (first_chunk_hold.py);
- the engine thread: how urgent the step it is about to run is (urgent_steps.py), and whether to wait while a
  reply's first block is at the codec instead of stepping (first_audio_hold.py);
- the codec thread: whose blocks wait while the engine runs such a step (`held_back_now`, `ahead_waits_now`), and
  which replies' first block it has handed over (`block_out`, `stream_ended`).

Two things cross threads here, both without a lock: the step's level (engine -> codec: one int replaced whole) and
the first blocks handed over (codec -> engine: a set and an Event, first_audio_hold.FirstBlocksOut). The playback
clocks are written on the event loop and read here, except the first-chunk hold this plans on them
(playback_clock.py).

`Pacing` itself is the do-nothing pacing of scheduler.policy fcfs: every running request takes every step, the engine
never waits for the codec and the codec holds nobody back. New pacing is a subclass of it: nothing else changes.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from wyoming_chorus.config import SchedulerSettings
from wyoming_chorus.playback_clock import PlaybackClock

from .codec_load import CodecLoad
from .first_audio_hold import FirstAudioHold, FirstBlocksOut
from .first_chunk_hold import FirstChunkHold
from .loop_periods import LoopPeriods
from .playback_policy import PlaybackLimits, PlaybackPolicy
from .sequence import Sequence
from .step_cost import StepCost
from .urgent_steps import FIRST_AUDIO, HEAD_START, QUIET, UrgentSteps, codec_level

# Whether a listener's next block waits now, from its playback clock (None: no listener, an offline request).
HeldBack = Callable[[PlaybackClock | None], bool]


def nobody_held(clock: PlaybackClock | None) -> bool:
    return False


class Pacing:
    """First come, first served (scheduler.policy: fcfs)."""

    # ---- the scheduler (on the engine thread) -------------------------------------------------------------------
    def skipped(self, running: list[Sequence]) -> set[int]:
        """Ids of the running requests that sit the next step out."""
        return set()

    # ---- the engine thread --------------------------------------------------------------------------------------
    def mark(self, batch: list[Sequence]) -> None:
        """Before each step: the requests it runs (none when the engine has nothing to run)."""

    def sat_out_tiers(self, sat_out: list[Sequence]) -> tuple[str, ...]:
        """The tier of each request the last skipped() sat out (chorus_playback_sat_out_total's label)."""
        return ()

    def hold_engine(self, running: Iterable[Sequence]) -> bool:
        """Whether the engine waited (briefly) instead of stepping; it asks again before it steps. `running`: the
        running requests whose audio goes to a listener."""
        return False

    # ---- the codec thread ---------------------------------------------------------------------------------------
    def held_back_now(self) -> HeldBack:
        """Whose blocks wait while the engine runs the step it marked last."""
        return nobody_held

    def ahead_waits_now(self) -> bool:
        """Whether a reply's next sentence made ahead of need waits at the codec after its first block, while the
        engine runs the step it marked last."""
        return False

    def block_out(self, seq_id: int) -> None:
        """A block of the reply went to its listener (or none will: its decoding failed)."""

    def stream_ended(self, seq_id: int) -> None:
        """The codec is done with the reply."""


class PlaybackPacing(Pacing):
    """scheduler.policy playback: the steps go to the listeners who need them (playback_policy.py); while the engine
    makes frames a listener waits for, the codec holds back the blocks of listeners who lose little by waiting
    (urgent_steps.py); and the engine steps aside while a reply's first block waits at the codec
    (first_audio_hold.py)."""

    def __init__(self, steps: PlaybackPolicy, block_frames: int, first_chunks: FirstChunkHold | None = None):
        """`block_frames`: frames per codec decoder block (a reply's first audio needs that many). `first_chunks`:
        plans the hold before each reply's first chunk (None: no hold)."""
        self.steps = steps
        self.first_chunks = first_chunks
        self.limits = steps.limits
        self.urgent = UrgentSteps()
        self.first_blocks = FirstBlocksOut(block_frames)
        self._hold = FirstAudioHold(self.first_blocks, steps.waits_for_first_audio)

    def skipped(self, running: list[Sequence]) -> set[int]:
        if self.first_chunks is not None:
            self.first_chunks.plan(running)
        return self.steps.skipped(running)

    def mark(self, batch: list[Sequence]) -> None:
        self.urgent.mark(codec_level(self.steps, batch))

    def sat_out_tiers(self, sat_out: list[Sequence]) -> tuple[str, ...]:
        tiers = self.steps.tiers
        return tuple(tiers[seq.id] for seq in sat_out if seq.id in tiers)

    def hold_engine(self, running: Iterable[Sequence]) -> bool:
        return self._hold.wait(running)

    def held_back_now(self) -> HeldBack:
        level = self.urgent.level
        return nobody_held if level == QUIET else partial(self._held, level)

    def _held(self, level: int, clock: PlaybackClock | None) -> bool:
        """Whether this listener's next block waits while the engine runs at `level`: if it has min_slack_seconds or
        more left to play (it loses nothing by it: a listener that plays at once hears every later block as a gap),
        and during a head start only if it has none itself (a head start's own blocks must not wait for the head
        start: a short reply is kept whole by them, and a conversion that holds the first head_start_seconds hears
        them that much later). A listener with no audio yet never waits."""
        if clock is None or (slack := clock.slack()) is None or slack < self.limits.min_slack_seconds:
            return False
        return level == FIRST_AUDIO or (level == HEAD_START and not self.steps.has_head_start(clock))

    def ahead_waits_now(self) -> bool:
        """While the engine makes frames a listener waits for (audio_output._waits says why)."""
        return self.urgent.level != QUIET

    def block_out(self, seq_id: int) -> None:
        self.first_blocks.handed_over(seq_id)

    def stream_ended(self, seq_id: int) -> None:
        self.first_blocks.ended(seq_id)


def pacing_for(scheduling: SchedulerSettings, cost: StepCost, frame_seconds: float, block_frames: int,
               codec: CodecLoad | None = None, periods: LoopPeriods | None = None) -> Pacing:
    """The pacing scheduler.* asks for. `codec`: what the codec thread measures of itself, `periods`: the engine
    loop's (the first-chunk hold plans with both; the policy lets replies ride along only while the codec keeps up)."""
    if scheduling.policy != "playback":
        return Pacing()
    limits = PlaybackLimits(scheduling.head_start_seconds, scheduling.min_slack_seconds, scheduling.max_slack_seconds)
    policy = PlaybackPolicy(limits, cost, frame_seconds, codec=codec)
    return PlaybackPacing(policy, block_frames, FirstChunkHold(cost, frame_seconds, scheduling.max_first_audio_seconds,
                                                               codec, periods, policy.batch_for,
                                                               block_frames * frame_seconds))
