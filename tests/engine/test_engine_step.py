"""The engine's public surface on the tiny model: `EngineCore.step()` (the caller steps an engine it has not started,
as the warm-up and the benchmarks do), the `EngineStats` snapshot the stepping thread publishes, and
`check_integrity()`, which runs on whichever thread owns the scheduler."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings, SchedulerSettings
from wyoming_chorus.engine.core import EngineCore
from wyoming_chorus.engine.scheduler import Scheduler
from wyoming_chorus.frontend.requests import RequestBuilder
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.speech import Speech

SETTINGS = EngineSettings(max_batch=2, random_model_frames=20)


@pytest.fixture(scope="module")
def model() -> ModelDir:
    return model_dir(SETTINGS)


def test_the_caller_steps_an_engine_it_has_not_started(model):
    core = EngineCore(model, SETTINGS)
    requests = RequestBuilder(model, SETTINGS)
    seqs = [requests.build(text, seed=i) for i, text in enumerate(["Hello there.", "Lights on.", "Good night."])]
    assert all(core.add(seq, None) for seq in seqs)  # no sink: the caller reads the frames
    reports = []
    while not reports or reports[-1].has_work:
        reports.append(core.step())
    assert all(seq.is_finished and seq.frames for seq in seqs)
    assert max(r.batch for r in reports) == 2  # two run at once, the third waits for a place
    assert sum(r.frames for r in reports) == sum(len(seq.frames) for seq in seqs)
    assert sorted(i for r in reports for i in r.finished) == sorted(seq.id for seq in seqs)
    assert all(0 < r.runner_seconds <= r.seconds for r in reports if r.batch)
    stats = core.stats()
    assert (stats.blocks_used, stats.running, stats.waiting) == (0, 0, 0)
    assert stats.steps == sum(1 for r in reports if r.batch)
    assert stats.frames == sum(len(seq.frames) for seq in seqs)
    assert not stats.alive  # nothing serves: no engine thread
    core.check_integrity()  # on this thread, which owns the scheduler while the engine is not started
    # The engine thread records metrics; the caller's steps (the warm-up's, a benchmark's) count in none.
    assert core.metrics.frames_total._value.get() == 0


def test_the_stats_are_a_frozen_snapshot_replaced_after_each_step(model):
    core = EngineCore(model, SETTINGS)
    seq = RequestBuilder(model, SETTINGS).build("Hello there.")
    core.add(seq, None)
    before = core.stats()
    assert core.stats() is before  # reading it computes nothing
    core.step()
    after = core.stats()
    assert after is not before
    assert (before.running, before.blocks_used, before.steps) == (0, 0, 0)  # what was true when it was published
    assert after.running == 1 and after.blocks_used > 0 and after.steps == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.running = 0  # type: ignore[misc]


def test_check_integrity_runs_on_the_engine_thread_while_it_runs(model, monkeypatch):
    checked_on: list[str] = []
    real_check = Scheduler.check_integrity

    def recording_check(scheduler: Scheduler) -> None:
        checked_on.append(threading.current_thread().name)
        real_check(scheduler)

    monkeypatch.setattr(Scheduler, "check_integrity", recording_check)
    engine = Speech(model, SETTINGS)
    engine.start()
    try:
        assert engine.stats().alive
        assert engine.metrics.frames_total._value.get() == 0  # the warm-up's steps are not the engine thread's
        checked_on.clear()
        engine.core.check_integrity()
        assert checked_on and set(checked_on) == {"chorus-engine"}  # the idle loop's own checks run there too
    finally:
        engine.stop()
    checked_on.clear()
    engine.core.check_integrity()  # stopped: the caller owns the scheduler now
    assert checked_on == [threading.current_thread().name]
    assert not engine.core.stats().alive


def test_the_first_chunk_hold_plans_with_the_codec_threads_own_cost(model):
    """The engine hands the hold the load its codec thread measures (engine/codec_load.py): a codec that makes each of
    two rooms less audio than they play lowers the rate the hold plans with below the steps' own."""
    core = EngineCore(model, SETTINGS, scheduling=SchedulerSettings(policy="playback"))
    core.step_cost.record(2, 0.01)  # the steps alone: 8x real time
    for _ in range(3):
        core.codec.load.block_done(0.45 * 0.32, 0.32)  # f32 codec on AVX2: 0.45 s per audio second
    assert core.pacing.first_chunks.rate(2) == pytest.approx(1 / (2 * 0.45))
