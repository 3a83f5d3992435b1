"""The engine core: one thread that runs schedule -> runner.step -> update, and a codec thread that turns frames into
PCM. It takes ready-made Sequences (the front-end thread builds them) and reads add, feed, promote, abort, step.

Requests cross into the engine thread as typed messages (engine.messages) that it drains at every step boundary, so
the scheduler, the block manager and the sinks are only ever touched by one thread and need no locks of their own.
Each request's audio leaves through its sink (an AudioSink: the request's handle), which the codec thread feeds.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

from service.config import EngineSettings
from service.engine.audio_output import AudioSink, CodecWorker
from service.engine.blocks import BlockManager
from service.engine.device import cpu_facts
from service.engine.messages import Abort, Add, CodecFailed, FeedText, Message, Promote, Stop
from service.engine.runner import PagedRunner, RunnerOptions
from service.engine.scheduler import Scheduler
from service.engine.sequence import FinishReason, Sequence
from service.errors import QueueFull, RequestFailed
from service.metrics import Metrics
from service.modeldir.manifest import ModelDir

_LOG = logging.getLogger(__name__)

# chorus_sentences_total's status label by how a request ended (a frame cap is a complete, if cut, reply)
_STATUS = {
    FinishReason.EOS: "ok",
    FinishReason.FRAME_CAP: "ok",
    FinishReason.ABORTED: "aborted",
    FinishReason.REJECTED: "rejected",
    FinishReason.ERROR: "error",
}


@dataclass(frozen=True)
class EngineStats:
    blocks_total: int
    blocks_used: int
    running: int
    waiting: int
    alive: bool


class EngineCore:
    def __init__(self, model: ModelDir, settings: EngineSettings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.model = model
        self.runner = PagedRunner(
            model,
            RunnerOptions(
                device=settings.device,
                kv_precision=settings.kv_precision,
                inference_precision=settings.inference_precision,
                num_blocks=settings.max_cache_blocks,
                kv_cache_bytes=settings.kv_cache_mb << 20,
            ),
        )
        self.sample_rate = model.manifest.sample_rate
        self.blocks = BlockManager(self.runner.num_blocks, self.runner.block_size, settings.prefix_caching)
        self._rows_reused_seen = 0
        self.scheduler = Scheduler(
            self.blocks,
            max_running=settings.max_batch,
            max_waiting=settings.max_waiting,
            token_budget=settings.step_token_budget,
            policy=settings.policy,
        )
        self.codec = CodecWorker(model, settings.inference_precision, on_failure=self._codec_failed)
        # Owned by the engine thread alone: the sink of every request it holds, and whether it is stopping.
        self._sinks: dict[int, AudioSink] = {}
        self._stopping = False
        # The one way into the engine thread. `_accepting` says whether that thread will still read a message put
        # now: it is set at start, and cleared (under `_life`) when the thread ends, before it fails whatever is
        # left, so that no request can slip in behind the last look and wait for ever.
        self._inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._life = threading.Lock()
        self._accepting = False
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self.metrics.kv_blocks_total.set(self.runner.num_blocks)

    def summary(self) -> list[str]:
        """What is being served, for the start-up log: the model, the device and its precision, the KV pool."""
        manifest = self.model.manifest
        random_note = ": RANDOM weights, its voices make noise, not speech" if manifest.random_weights else ""
        device = self.runner.device
        if device == "CPU":
            facts = cpu_facts()
            device = f"CPU ({facts.isa}), inference {facts.inference_precision(self.settings.inference_precision)}"
        blocks, block = self.runner.num_blocks, self.runner.block_size
        # A typical reply: the prompt (~30 rows) and 10 s of speech at 12.5 frames per second.
        per_room = -(-(30 + 125) // block)
        return [
            f"model {manifest.name} ({manifest.model_type}, {manifest.weights} weights) "
            f"from {self.model.path}{random_note}",
            f"device {device}, KV cache {self.runner.kv_precision}: {blocks} blocks of {block} tokens "
            f"({blocks * block} tokens, {blocks * self.runner.bytes_per_block / 2**20:.0f} MiB), "
            f"room for {blocks // per_room} replies of 10 s at once ({self.settings.max_batch} run in one batch)",
        ]

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self, warm_up: Sequence) -> None:
        """Runs `warm_up` (a short request) to the end, then starts both threads. It blocks for the first infer of
        each compiled model, which JIT-compiles its kernels (seconds on a big model): call it off the event loop,
        and it is paid here, not in the first room's time to first audio."""
        self.scheduler.add(warm_up)
        while self.scheduler.has_work():
            entries = self.scheduler.schedule()
            self.scheduler.update(entries, self.runner.step(entries))
        self.codec.warm_up(np.stack(warm_up.frames))
        self.scheduler.check_integrity()
        self.codec.start()
        self._accepting = True
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Abort whatever still runs (every reader sees an error), then stop both threads."""
        self._send(Stop())
        self._thread.join(timeout)
        self.codec.stop(timeout)

    @property
    def alive(self) -> bool:
        """Whether a request made now will be served: the one place that decides it."""
        return self._accepting and self._thread.is_alive() and self.codec.is_alive()

    def stats(self) -> EngineStats:
        return EngineStats(
            blocks_total=self.blocks.num_blocks,
            blocks_used=self.blocks.num_used,
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting),
            alive=self.alive,
        )

    # ---- what other threads send (the front-end thread; stop from the caller's) --------------------------------
    def add(self, seq: Sequence, sink: AudioSink) -> bool:
        """Runs `seq`, its audio going to `sink` (whose `put`, `add_codes`, `finish` and `fail` the codec thread
        calls); False when the engine is not running. A deferred `seq` (audio made ahead of need) runs only where
        it takes no place another request waits for, until it is promoted."""
        return self._send(Add(seq, sink))

    def feed(self, seq_id: int, rows: np.ndarray, frame_cap: int, close: bool) -> None:
        """More text rows for a streaming request (made with text_open); a finished request ignores them."""
        self._send(FeedText(seq_id, rows, frame_cap, close))

    def promote(self, seq_id: int) -> None:
        self._send(Promote(seq_id))

    def abort(self, seq_id: int) -> None:
        """Its blocks are freed at the next step boundary, and its sink fails with "aborted"."""
        self._send(Abort(seq_id))  # a stopped engine has already failed every request it held

    def _send(self, message: Message) -> bool:
        """Hands `message` to the engine thread; False when that thread no longer reads messages."""
        with self._life:
            if self._accepting:
                self._inbox.put(message)
            return self._accepting

    def _codec_failed(self, seq_id: int, error: Exception) -> None:
        """Called on the codec thread: the request is ended (and no frame more made) by the engine thread."""
        _LOG.error("codec decoder failed for request %d: %s", seq_id, error)
        self._send(CodecFailed(seq_id, f"the audio decoder failed: {error}"))

    # ---- the engine thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        """schedule -> step -> update until stopped; messages are read between steps (blocking while idle)."""
        idle = False
        try:
            while not (self._stopping and not self.scheduler.has_work()):
                self._read_messages(wait=idle)
                entries = self.scheduler.schedule()
                self.metrics.preemptions_total.inc(len(self.scheduler.preempted))  # with or without entries
                idle = not entries and not self.scheduler.preempted  # a victim's place goes at the next schedule()
                if entries:
                    self._step(entries)
                else:
                    self.scheduler.check_integrity()
                    self._update_gauges()
        except Exception:  # a bug in the loop must end every reply, not hang the callers
            _LOG.exception("engine loop crashed")
        finally:
            self._close()

    def _step(self, entries) -> None:
        started = time.perf_counter()
        try:
            output = self.runner.step(entries)
        except Exception as error:  # a fault in one step ends the requests in it; the engine goes on
            _LOG.exception("a step of %d requests failed", len(entries))
            failed = self.scheduler.finish_requests([e.seq.id for e in entries], FinishReason.ERROR,
                                                    f"generation failed: {error}")
            for seq in failed:
                self._finish(seq)
            return
        result = self.scheduler.update(entries, output)
        self._observe_step(len(entries), time.perf_counter() - started, result)
        for seq, codes in result.new_frames:
            self.codec.push(seq.id, self._sinks[seq.id], codes)
        for seq in result.finished:
            self._finish(seq)

    def _read_messages(self, wait: bool) -> None:
        """Every message queued now; with `wait`, first block (up to a second: the idle integrity check) for one."""
        if wait:
            try:
                self._process(self._inbox.get(timeout=1.0))
            except queue.Empty:
                return
        while True:
            try:
                message = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._process(message)

    def _process(self, message: Message) -> None:
        if isinstance(message, Add):
            self._sinks[message.seq.id] = message.sink
            if message.seq.codec_prefix is not None:  # queued before any of its frames can be
                self.codec.prime(message.seq.id, message.sink, message.seq.codec_prefix)
            if not self.scheduler.add(message.seq):  # refused on the spot: queue full, or it never fits the pool
                self._finish(message.seq)
        elif isinstance(message, Abort):
            self._end([message.seq_id], FinishReason.ABORTED)
        elif isinstance(message, FeedText):
            outgrown = self.scheduler.feed(message.seq_id, message.rows, message.frame_cap, message.close)
            if outgrown is not None:  # its text now needs more than the whole pool: ended with an error
                self._finish(outgrown)
        elif isinstance(message, Promote):
            self.scheduler.promote(message.seq_id)
        elif isinstance(message, CodecFailed):
            self._end([message.seq_id], FinishReason.ERROR, message.reason)
        elif isinstance(message, Stop):
            self._stopping = True
            self._end(list(self._sinks), FinishReason.ABORTED)

    def _end(self, ids: list[int], reason: FinishReason, error: str | None = None) -> None:
        for seq in self.scheduler.finish_requests(ids, reason, error):
            self._finish(seq)

    def _close(self) -> None:
        """The engine thread's last act: take no more messages, then fail every request still held or queued."""
        with self._life:
            self._accepting = False
        stopped = RequestFailed("the engine stopped")
        for seq_id, sink in list(self._sinks.items()):
            if self.codec.is_alive():
                self.codec.fail(seq_id, sink, stopped)  # behind its frames, in order
            else:
                sink.fail(stopped)
        self._sinks.clear()
        while True:
            try:
                message = self._inbox.get_nowait()
            except queue.Empty:
                break
            if isinstance(message, Add):
                message.sink.fail(stopped)

    def _finish(self, seq: Sequence) -> None:
        sink = self._sinks.pop(seq.id, None)
        if sink is None or seq.finish_reason is None:
            return
        self.metrics.sentences_total.labels(status=_STATUS[seq.finish_reason]).inc()
        if seq.finish_reason is FinishReason.REJECTED:
            self.codec.fail(seq.id, sink, QueueFull(seq.error or "the server is busy"))
        elif seq.finish_reason is FinishReason.ERROR:
            self.codec.fail(seq.id, sink, RequestFailed(seq.error or "the request failed"))
        elif seq.finish_reason is FinishReason.ABORTED:
            self.codec.abort(seq.id, sink)
        else:
            self.codec.close(seq.id, sink)

    def _observe_step(self, batch: int, seconds: float, result) -> None:
        m = self.metrics
        m.batch_size.observe(batch)
        m.step_seconds.observe(seconds)
        m.frames_total.inc(len(result.new_frames))
        self._update_gauges()

    def _update_gauges(self) -> None:
        m = self.metrics
        m.kv_blocks_used.set(self.blocks.num_used)
        m.requests_running.set(len(self.scheduler.running))
        m.requests_awaiting_text.set(len(self.scheduler.awaiting_text))
        m.kv_blocks_cached.set(self.blocks.num_cached)
        if self.blocks.rows_reused > self._rows_reused_seen:
            m.prefix_rows_reused_total.inc(self.blocks.rows_reused - self._rows_reused_seen)
            self._rows_reused_seen = self.blocks.rows_reused
        m.requests_waiting.set(len(self.scheduler.waiting))

