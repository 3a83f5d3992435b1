"""What the engine tells the outside: what one step did (`StepReport`, returned by `EngineCore.step`), and what the
engine holds (`EngineStats`, published by the thread that steps).

The scheduler and the block manager belong to the engine thread, so no other thread reads them. Instead that thread
makes an `EngineStats` after every step (and every second while idle) and publishes it by replacing one attribute:
/health, the tests and the benchmarks read that frozen snapshot, which is never half-changed.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineStats:
    blocks_total: int  # KV cache blocks in the pool
    blocks_used: int  # held by requests
    blocks_cached: int  # free, but still holding a prompt prefix
    running: int  # requests in the batch
    waiting: int  # requests not yet admitted (or preempted)
    awaiting_text: int  # requests of a streamed text holding blocks while they wait for its next words
    rows_reused: int  # prompt rows taken from the prefix cache since start
    steps: int  # steps that ran a batch, since start
    frames: int  # frames generated since start
    alive: bool  # the engine thread was serving when it published this


@dataclass(frozen=True)
class StepReport:
    preempted: int  # requests sent back to wait (their blocks freed, recomputed later)
    has_work: bool  # the engine still holds requests, so a later step may have something to run
    batch: int = 0  # requests the step ran; 0 when none was ready
    frames: int = 0  # frames generated
    finished: tuple[int, ...] = ()  # requests that ended during it, for any reason (their audio is being closed)
    seconds: float = 0.0  # the batch's time: runner and update (chorus_step_seconds)
    runner_seconds: float = 0.0  # the runner's part of it; the rest of a step's wall time is the host's
    failed: bool = False  # the runner raised: the batch's requests ended with an error
    slack: tuple[float, ...] = ()  # the playback slack of each request in the step whose listener hears audio
    sat_out: tuple[str, ...] = ()  # the playback tier of each running request the policy sat out of the step
