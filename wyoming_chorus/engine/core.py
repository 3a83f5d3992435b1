"""The engine core: one thread that steps (messages, schedule, runner.step, update) and a codec thread that turns
frames into PCM, over ready-made Sequences (the front-end thread builds them).

Other threads reach the engine only through typed messages (engine.messages) read at step boundaries, so the
scheduler, the block manager and the sinks have one owner and need no locks; what others see of them is the frozen
`EngineStats` that owner publishes (engine.stats). Each request's audio leaves through its sink (its handle), which
the codec thread feeds. `step()` is public (nano-vllm's `LLMEngine.step`): the engine thread is a loop around it,
and before `start()` the caller may step the engine itself, from one thread (the warm-up, the engine benchmarks).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace

import numpy as np

from wyoming_chorus.config import EngineSettings, SchedulerSettings
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.audio_output import CodecWorker
from wyoming_chorus.engine.blocks import BlockManager
from wyoming_chorus.engine.codec_load import CodecLoad
from wyoming_chorus.engine.device import available_devices, resolve_device
from wyoming_chorus.engine.loop_periods import LoopPeriods
from wyoming_chorus.engine.messages import Abort, Add, CheckIntegrity, CodecFailed, FeedText, Message, Promote, Stop
from wyoming_chorus.engine.pacing import pacing_for
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.scheduler import ScheduledEntry, Scheduler
from wyoming_chorus.engine.sequence import FinishReason, Sequence
from wyoming_chorus.engine.stats import EngineStats, StepReport
from wyoming_chorus.engine.step_cost import StepCost, probe_batches
from wyoming_chorus.engine.step_metrics import StepMetrics, playback_slack
from wyoming_chorus.engine.streaming_codec import BLOCK_FRAMES
from wyoming_chorus.errors import RequestFailed
from wyoming_chorus.inbox import Inbox
from wyoming_chorus.lm_precision import lm_precision
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.api import Handle

_LOG = logging.getLogger(__name__)

# While idle, the engine thread wakes this often to check the invariants and publish its stats.
_IDLE_SECONDS = 1.0


class EngineCore:
    def __init__(self, model: ModelDir, settings: EngineSettings, metrics: Metrics | None = None,
                 runner: PagedRunner | None = None, scheduling: SchedulerSettings | None = None):
        """`runner`: one already built for `model` (benchmarks share one between cores), in place of one made from
        `settings`. `scheduling`: which running requests take each step (scheduler.*)."""
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.model = model
        device = resolve_device(settings.device, available_devices())
        self.lm_precision = lm_precision(settings.inference_precision, model.manifest.weights, device,
                                         cpu_facts() if device == "CPU" else None, settings.kv_precision)
        self.runner = runner or PagedRunner(model, RunnerOptions(
            device=device, kv_precision=settings.kv_precision,
            inference_precision=self.lm_precision.hint, num_blocks=settings.max_cache_blocks,
            kv_cache_bytes=settings.kv_cache_mb << 20, native_matmuls=settings.native_matmul))
        self.sample_rate = model.manifest.sample_rate
        self.step_cost = StepCost()
        frame_seconds = model.manifest.samples_per_frame / model.manifest.sample_rate
        # What the codec thread costs the rooms, and how often the loop comes round: the capacity figure and the
        # first-chunk hold count both.
        codec_load, loop_periods = CodecLoad(), LoopPeriods()
        # The playback policy (scheduler.policy): the scheduler, this thread and the codec's all ask it.
        self.pacing = pacing_for(scheduling or SchedulerSettings(), self.step_cost, frame_seconds, BLOCK_FRAMES,
                                 codec_load, loop_periods)
        self.codec = CodecWorker(model, settings.codec_precision, settings.inference_precision,
                                 on_failure=self._codec_failed, pacing=self.pacing, load=codec_load)
        self._observer = StepMetrics(self.metrics, self.step_cost, frame_seconds, settings.max_batch, codec_load,
                                     periods=loop_periods)
        self._max_batch = settings.max_batch
        # Owned by whoever steps (the engine thread once started): the scheduler and its block pool, the sink of
        # every request (None: an offline request, whose caller reads its frames), whether it is stopping, counts.
        self._scheduler = Scheduler(
            BlockManager(self.runner.num_blocks, self.runner.block_size, settings.prefix_caching),
            max_running=settings.max_batch,
            max_waiting=settings.max_waiting,
            token_budget=settings.step_token_budget,
            policy=settings.policy,
            pacing=self.pacing,
        )
        self._sinks: dict[int, Handle | None] = {}
        self._stopping = False
        self._steps = self._frames = 0
        # The one way into the engine, read by the caller that steps before start(), then by the engine thread, which
        # closes it when it ends and fails whatever is left (wyoming_chorus.inbox).
        self._inbox: Inbox[Message] = Inbox()
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self._stats = self._snapshot()
        self.metrics.kv_blocks_total.set(self.runner.num_blocks)

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self, warm_up: Sequence, probe: Callable[[], Sequence] | None = None) -> None:
        """Steps `warm_up` (a short request) to the end, then starts both threads. It blocks for the first infer of
        each compiled model, which JIT-compiles its kernels (seconds on a big model): call it off the event loop,
        and it is paid here, not in the first room's time to first audio. `probe` makes more such requests: batches
        of them (probe_batches) give the step-cost model its first figure for each size, so the playback policy
        does not start out guessing what a larger batch costs (it would guess cautiously, and so cut batches the
        box can afford until it happened to run one)."""
        self.add(warm_up, None)
        while self.step().has_work:
            pass
        if probe is not None:
            for size in probe_batches(self._max_batch):
                for _ in range(size):
                    self.add(probe(), None)
                while self.step().has_work:
                    pass
        self.codec.warm_up(np.stack(warm_up.frames))
        self.check_integrity()
        self.codec.start()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Abort whatever still runs (every reader sees an error), then stop both threads."""
        self._inbox.put(Stop())
        if self._thread.ident is not None:  # a start that failed earlier left no thread to join
            self._thread.join(timeout)
        self.codec.stop(timeout)

    @property
    def alive(self) -> bool:
        """Whether a request made now will be served: the one place that decides it."""
        return not self._inbox.closed and self._thread.is_alive() and self.codec.is_alive()

    def stats(self) -> EngineStats:
        """What the engine held after its last step (or idle second): the snapshot it published, from any thread."""
        return self._stats

    def check_integrity(self, timeout: float = 10.0) -> None:
        """Raises IntegrityError (engine.blocks) if the scheduler's or the block pool's books disagree. The
        check runs on their owner, between two steps: as a message to the engine thread while it runs (this waits
        for the answer), else on the caller's thread, which then owns them (before start, or once stopped)."""
        if self._thread.is_alive():
            done: Future[None] = Future()
            if self._inbox.put(CheckIntegrity(done)):
                done.result(timeout)
                return
        self._scheduler.check_integrity()

    # ---- what other threads send (the front-end thread; stop from the caller's) --------------------------------
    def add(self, seq: Sequence, sink: Handle | None) -> bool:
        """Runs `seq`, its audio going to `sink` (whose `put`, `add_codes`, `finish` and `fail` the codec thread
        calls); False when the engine is not running. A deferred `seq` (audio made ahead of need) runs only where
        it takes no place another request waits for, until it is promoted. With no sink (offline, before start)
        no audio is made: the caller reads the frames off `seq` between its steps."""
        return self._inbox.put(Add(seq, sink))

    def feed(self, seq_id: int, rows: np.ndarray, frame_cap: int, close: bool) -> None:
        """More text rows for a streaming request (made with text_open); a finished request ignores them."""
        self._inbox.put(FeedText(seq_id, rows, frame_cap, close))

    def promote(self, seq_id: int) -> None:
        self._inbox.put(Promote(seq_id))

    def abort(self, seq_id: int) -> None:
        """Its blocks are freed at the next step boundary, and its sink fails with "aborted"."""
        self._inbox.put(Abort(seq_id))  # a stopped engine has already failed every request it held

    def _codec_failed(self, seq_id: int, error: Exception) -> None:
        """Called on the codec thread: the request is ended (and no frame more made) by the engine thread."""
        _LOG.error("codec decoder failed for request %d: %s", seq_id, error)
        self._inbox.put(CodecFailed(seq_id, f"the audio decoder failed: {error}"))

    # ---- one step (the engine thread; the caller before start) ---------------------------------------------------
    def step(self) -> StepReport:
        """Takes the messages queued now, schedules, runs the batch, updates its requests (their frames go to the
        codec thread), and publishes the stats. A step with nothing to run checks the invariants instead."""
        for message in self._inbox.take_all():
            self._process(message)
        entries = self._scheduler.schedule()
        preempted = len(self._scheduler.preempted)  # with or without entries: a victim's place goes next time
        self.pacing.mark([entry.seq for entry in entries])
        if entries:
            report = self._run_batch(entries, preempted, self.pacing.sat_out_tiers(self._scheduler.sat_out))
        else:
            self._scheduler.check_integrity()
            report = StepReport(preempted, self._scheduler.has_work())
        self._stats = self._snapshot()
        return report

    def _run_batch(self, entries: list[ScheduledEntry], preempted: int, sat_out: tuple[str, ...] = ()) -> StepReport:
        started = time.perf_counter()
        try:
            output = self.runner.step(entries)
        except Exception as error:  # a fault in one step ends the requests in it; the engine goes on
            _LOG.exception("a step of %d requests failed", len(entries))
            ids = tuple(e.seq.id for e in entries)
            self._end(list(ids), FinishReason.ERROR, f"generation failed: {error}")
            seconds = time.perf_counter() - started
            return StepReport(preempted, self._scheduler.has_work(), len(entries), finished=ids, seconds=seconds,
                              runner_seconds=seconds, failed=True)
        runner_seconds = time.perf_counter() - started
        result = self._scheduler.update(entries, output)
        seconds = time.perf_counter() - started
        if all(entry.num_new == 1 for entry in entries):  # a prompt's rows would make a batch size look dearer
            self.step_cost.record(len(entries), seconds)
        for seq, codes in result.new_frames:
            if (sink := self._sinks[seq.id]) is not None:
                self.codec.push(seq.id, sink, codes)
        for seq in result.finished:
            self._finish(seq)
        self._steps += 1
        self._frames += len(result.new_frames)
        return StepReport(preempted, self._scheduler.has_work(), len(entries), len(result.new_frames),
                          tuple(seq.id for seq in result.finished), seconds, runner_seconds,
                          slack=playback_slack(entries), sat_out=sat_out)

    def _snapshot(self) -> EngineStats:
        s, blocks = self._scheduler, self._scheduler.blocks
        return EngineStats(blocks_total=blocks.num_blocks, blocks_used=blocks.num_used, blocks_cached=blocks.num_cached,
                           running=len(s.running), waiting=len(s.waiting), awaiting_text=len(s.awaiting_text),
                           rows_reused=blocks.rows_reused, steps=self._steps, frames=self._frames, alive=self.alive)

    # ---- the engine thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        """Steps until stopped; while there is nothing to run it blocks for the next message (or an idle second)."""
        idle = False
        try:
            while not (self._stopping and not self._scheduler.has_work()):
                if idle:
                    if (message := self._inbox.get(timeout=_IDLE_SECONDS)) is not None:
                        self._process(message)
                elif self.pacing.hold_engine(
                        seq for seq in self._scheduler.running if self._sinks.get(seq.id) is not None):
                    continue
                report = self.step()
                self._observer.observe(report, self._stats, self._scheduler.requests.values())
                idle = not report.batch and not report.preempted
        except Exception:  # a bug in the loop must end every reply, not hang the callers
            _LOG.exception("engine loop crashed")
        finally:
            self._close()

    def _process(self, message: Message) -> None:
        if isinstance(message, Add):
            self._sinks[message.seq.id] = message.sink
            if message.seq.codec_prefix is not None and message.sink is not None:  # before any of its frames
                self.codec.prime(message.seq.id, message.sink, message.seq.codec_prefix)
            if not self._scheduler.add(message.seq):  # refused on the spot: queue full, or it never fits the pool
                self._finish(message.seq)
        elif isinstance(message, Abort):
            self._end([message.seq_id], FinishReason.ABORTED)
        elif isinstance(message, FeedText):
            outgrown = self._scheduler.feed(message.seq_id, message.rows, message.frame_cap, message.close)
            if outgrown is not None:  # its text now needs more than the whole pool: ended with an error
                self._finish(outgrown)
        elif isinstance(message, Promote):
            self._scheduler.promote(message.seq_id)
        elif isinstance(message, CodecFailed):
            self._end([message.seq_id], FinishReason.ERROR, message.reason)
        elif isinstance(message, CheckIntegrity):
            self._check_integrity(message.done)
        elif isinstance(message, Stop):
            self._stopping = True
            self._end(list(self._sinks), FinishReason.ABORTED)

    def _check_integrity(self, done: Future[None]) -> None:
        try:
            self._scheduler.check_integrity()
        except Exception as error:  # the asker raises it
            done.set_exception(error)
        else:
            done.set_result(None)

    def _end(self, ids: list[int], reason: FinishReason, error: str | None = None) -> None:
        for seq in self._scheduler.finish_requests(ids, reason, error):
            self._finish(seq)

    def _close(self) -> None:
        """The engine thread's last act: take no more messages, then fail every request still held or queued."""
        left = self._inbox.close()
        stopped = RequestFailed("the engine stopped")
        for seq_id, sink in self._sinks.items():
            if sink is not None and not self.codec.fail(seq_id, sink, stopped):  # behind its frames, in order
                sink.fail(stopped)  # the codec thread has stopped too
        self._sinks.clear()
        for message in left:
            if isinstance(message, Add) and message.sink is not None:
                message.sink.fail(stopped)
            elif isinstance(message, CheckIntegrity):
                self._check_integrity(message.done)
        self._stats = replace(self._stats, alive=False)

    def _finish(self, seq: Sequence) -> None:
        sink = self._sinks.pop(seq.id, None)
        if sink is None or seq.finish_reason is None:
            return
        self.metrics.sentences_total.labels(status=seq.finish_reason.status).inc()
        if not self.codec.end(seq.id, sink, seq.finish_reason, seq.error):  # the codec thread has stopped
            sink.fail(RequestFailed("the engine stopped"))
