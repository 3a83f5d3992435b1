"""From frames to the caller's PCM: a codec thread decodes each request's frames as they arrive and hands the audio
to the request's sink, which carries it across into the caller's asyncio loop.

Decoding runs beside the engine loop, not inside it, so a talker step never waits for the vocoder (on an iGPU the
two even run on different devices). One worker keeps the frames of each request in order; between requests, it
decodes in their listeners' order, not the frames' arrival order: it takes whatever has queued up since it last
looked, decodes one decoder block (4 frames, 320 ms of audio) of the most urgent stream with work (no audio yet
first, then least slack: the playback clock, as the scheduler orders its steps; a reply's next sentence last), hands
that block's audio over at once, and looks again. So a new reply's first audio waits at most for the one block in
progress, never behind the rest of a read-out's backlog, and a listener hears every block as soon as it exists: a
reply made at least as fast as it plays never runs dry (with larger chunks it would have to be made several times
faster than that at its start).
"""
from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wyoming_chorus.engine.codec_load import CodecLoad
from wyoming_chorus.engine.codec_precision import choose_codec_decoder
from wyoming_chorus.engine.pacing import HeldBack, Pacing, nobody_held
from wyoming_chorus.engine.sequence import FinishReason
from wyoming_chorus.errors import QueueFull, RequestFailed
from wyoming_chorus.inbox import Inbox
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.playback_clock import PlaybackClock
from wyoming_chorus.speech.api import Handle

# Cloned voices whose primed decoder state is kept (the least recently used goes first).
PRIMED_VOICES = 8
# While every block the codec thread could decode is held back (engine/pacing.py), it waits this long for new frames
# at most before it asks the pacing again; new frames wake it at once.
HOLD_POLL_SECONDS = 0.02
# A job for the codec thread: (kind, request id, its Handle, the codes or the error); _STOP ends the thread.
Job = tuple[str, int, Any, Any]
_STOP: Job = ("stop", -1, None, None)


@dataclass
class _Stream:
    state: object
    sink: Handle | None = None  # where its audio goes, once a frame has come
    pending: list[np.ndarray] = field(default_factory=list)
    closing: bool = False  # its last frame has come: the rest is decoded in turn, then the sink finishes
    blocks_out: int = 0  # decoder blocks handed to its sink so far

    def has_work(self, block_frames: int) -> bool:
        """A whole decoder block is pending, or the stream is ending (its rest, or its finish, is due)."""
        return self.sink is not None and (len(self.pending) >= block_frames or self.closing)


class CodecWorker:
    """`on_failure(seq_id, error)` is told, on the codec thread, when decoding a request's frames fails: the engine
    then ends that request through its one abort path (so no frame more is generated for it), and its sink learns of
    the error from the fail() that follows. Without it, the sink is failed directly."""

    def __init__(self, model: ModelDir, codec_precision: str = "auto", inference_precision: str = "",
                 on_failure: Callable[[int, Exception], None] | None = None, pacing: Pacing | None = None,
                 load: CodecLoad | None = None):
        """codec_precision, inference_precision: engine.codec_precision and engine.inference_precision. `pacing`:
        the engine's playback policy (engine/pacing.py), which says whose blocks wait while the engine makes frames
        others wait for, and is told when a reply's first block is out; by default nobody waits. `load`: where this
        thread publishes what it costs the rooms (the engine's capacity figure and first-chunk hold read it)."""
        self.choice = choose_codec_decoder(model / "codec_decoder.xml", model.manifest.codebook_size,
                                           codec_precision, inference_precision)
        self._decoder = self.choice.decoder
        self._sample_rate = model.manifest.sample_rate
        self._on_failure = on_failure
        self._pacing = pacing or Pacing()
        self.load = load or CodecLoad()
        self._jobs: Inbox[Job] = Inbox()  # closed at stop: a job put later is refused (False), its caller answers
        self._streams: dict[int, _Stream] = {}
        self._failed: set[int] = set()  # requests whose decoding failed: their frames still queued are dropped
        # In-context clones: the decoder's state after a clip's codes, by the codes' digest, so that a voice's later
        # requests start from it instead of decoding the clip again (~5 MB each at real dims; the few most recent).
        self._primed: OrderedDict[bytes, list[np.ndarray]] = OrderedDict()
        self._thread = threading.Thread(target=self._run, name="chorus-codec", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def warm_up(self, frames: np.ndarray) -> None:
        self._decoder.push(self._decoder.new_stream(), frames)

    def stop(self, timeout: float) -> None:
        """The jobs put before this are still done, with every block they make ready."""
        self._jobs.put(_STOP)
        if self._thread.ident is not None:  # a start that failed earlier left no thread to join
            self._thread.join(timeout)

    # Called from the engine thread (prime: when the request is added, before its first step); the work happens on
    # the codec thread, in order. Each says whether it will be done: False once the codec thread has stopped.
    def prime(self, seq_id: int, sink: Handle, codes: np.ndarray) -> bool:
        """Decode `codes` [n, 16] first and drop their audio: the decoder's causal state then continues from them.

        In-context cloning: the reference decodes the clip's codes ++ the generated codes as one utterance and cuts
        int(n / total * samples) samples, which is n * 1920 except where float rounding makes it one less (~4% of
        (n, total) pairs; its output then starts with the clip part's last sample). This cuts exactly n * 1920:
        the total is not known while streaming."""
        return self._jobs.put(("prime", seq_id, sink, codes))

    def push(self, seq_id: int, sink: Handle, codes: np.ndarray) -> bool:
        return self._jobs.put(("frame", seq_id, sink, codes))

    def close(self, seq_id: int, sink: Handle) -> bool:
        return self._jobs.put(("close", seq_id, sink, None))

    def fail(self, seq_id: int, sink: Handle, error: Exception) -> bool:
        return self._jobs.put(("fail", seq_id, sink, error))

    def abort(self, seq_id: int, sink: Handle) -> bool:
        """Frames not yet decoded are discarded, and the sink fails with "aborted"."""
        return self._jobs.put(("abort", seq_id, sink, None))

    def end(self, seq_id: int, sink: Handle, reason: FinishReason, error: str | None = None) -> bool:
        """The request ended for `reason` (its Sequence's error message: `error`): behind its frames, its listener
        gets the end of its audio, or the error."""
        if reason in (FinishReason.EOS, FinishReason.FRAME_CAP):
            return self.close(seq_id, sink)
        if reason is FinishReason.ABORTED:
            return self.abort(seq_id, sink)
        if reason is FinishReason.REJECTED:
            return self.fail(seq_id, sink, QueueFull(error or "the server is busy"))
        return self.fail(seq_id, sink, RequestFailed(error or "the request failed"))

    def _run(self) -> None:
        try:
            self._serve()
        finally:  # stopped, or a bug: every job left fails its request rather than leave its reader waiting
            _refuse(self._jobs.close())

    def _serve(self) -> None:
        stopping = False
        holding = False  # the most urgent block was held back at the last look
        while True:
            if not stopping:
                # Wait only when nothing is ready (or all of it is held back: then briefly); either way take everything
                # queued now, so that the next block is the most urgent one the worker knows of.
                jobs = self._take_jobs(wait=holding or self._next_ready() is None,
                                       timeout=HOLD_POLL_SECONDS if holding else None)
                at = next((i for i, job in enumerate(jobs) if job is _STOP), None)
                if at is not None:  # the jobs before it are still done, and every block they make ready
                    stopping = True
                    jobs, left = jobs[:at], jobs[at + 1:] + self._jobs.close()
                    _refuse(left)
                for kind, seq_id, sink, payload in jobs:
                    with self._ending_on_failure(seq_id, sink):
                        self._handle(kind, seq_id, sink, payload)
                self._publish_rooms()
            held = self._pacing.held_back_now() if not stopping else nobody_held
            ahead_waits = not stopping and self._pacing.ahead_waits_now()
            ready = self._next_ready(held, ahead_waits)
            holding = False
            if ready is None:
                if stopping:
                    return
                continue
            seq_id, stream = ready
            sink = stream.sink
            assert sink is not None
            if _waits(stream, held, ahead_waits):
                # The engine is making frames a listener waits for, and this one loses little by waiting: let the
                # steps have the cores, and choose again soon (new frames may have come, or the level dropped).
                holding = True
                continue
            # One decoder block, then look at the queue again: a new reply's first frames, come meanwhile, go
            # before the rest of a read-out's backlog instead of waiting for it.
            with self._ending_on_failure(seq_id, sink):
                self._decode_block(seq_id, stream, sink)
            self._publish_rooms()

    def _take_jobs(self, wait: bool, timeout: float | None = None) -> list[Job]:
        first = self._jobs.get(timeout) if wait else None
        return ([first] if first is not None else []) + self._jobs.take_all()

    def _next_ready(self, held: HeldBack = nobody_held, ahead_waits: bool = False) -> tuple[int, _Stream] | None:
        """The stream whose block goes next, of those with work (a whole block pending, or an ending): one with no
        audio yet first; then those that do not wait now (`_waits`); then the least slack. A reply's next
        sentence made ahead of need goes after all of them: its listener hears it only once the sentence before has
        played, though by its clock (the reply's) it looked as urgent as that one, and more so than other listeners
        with more slack. (At one room it measured no faster: there the box itself is at real time.)"""
        ready = [(seq_id, s) for seq_id, s in self._streams.items() if s.has_work(self._decoder.block_frames)]

        def order(item: tuple[int, _Stream]) -> tuple[bool, bool, bool, float]:
            sink = item[1].sink
            assert sink is not None  # has_work
            urgency = _urgency(sink.clock)
            return not sink.needed_now, urgency != float("-inf"), _waits(item[1], held, ahead_waits), urgency

        return min(ready, key=order, default=None)

    def _decode_block(self, seq_id: int, stream: _Stream, sink: Handle) -> None:
        """The stream's next decoder block, its audio to the sink at once; an ending stream's last frames (fewer than
        a block) are its last chunk, and once nothing is left the sink finishes. The blocks fall at the same frames
        whenever the frames came, so the audio never depends on timing."""
        if not stream.pending:  # ending, everything decoded
            del self._streams[seq_id]
            self._pacing.stream_ended(seq_id)
            sink.finish()
            return
        started = time.perf_counter()
        frames = min(self._decoder.block_frames, len(stream.pending))
        pcm = self._decoder.push(stream.state, np.stack(stream.pending[:frames]))
        del stream.pending[:frames]
        sink.put(pcm16(pcm))
        stream.blocks_out += 1
        if frames == self._decoder.block_frames:
            self.load.block_done(time.perf_counter() - started, len(pcm) / self._sample_rate)
        self._pacing.block_out(seq_id)

    def _publish_rooms(self) -> None:
        """The listeners whose audio this thread still owes (those of the engine's requests may have all their frames
        made already), for the capacity warning's count of rooms."""
        self.load.rooms = frozenset(id(s.sink.clock) for s in self._streams.values()
                                    if s.sink is not None and s.sink.clock is not None)

    @contextlib.contextmanager
    def _ending_on_failure(self, seq_id: int, sink: Handle) -> Iterator[None]:
        """A decoder failure ends this reply only."""
        try:
            yield
        except Exception as error:
            self._streams.pop(seq_id, None)
            if self._on_failure is None:
                sink.fail(error)
            else:
                self._failed.add(seq_id)
                self._pacing.block_out(seq_id)  # no block will come: the engine must not wait for one
                self._on_failure(seq_id, error)

    def _handle(self, kind: str, seq_id: int, sink: Handle, payload) -> None:
        if seq_id in self._failed:
            if kind in ("prime", "frame"):
                return  # its decoder state is gone: decoding on from zero would be wrong audio
            self._failed.discard(seq_id)
        if kind == "prime":
            key = hashlib.blake2b(np.ascontiguousarray(payload, np.int64).tobytes(), digest_size=16).digest()
            if key in self._primed:
                self._primed.move_to_end(key)
                self._streams[seq_id] = _Stream(self._decoder.stream_from(self._primed[key]))
                return
            stream = self._streams[seq_id] = _Stream(self._decoder.new_stream())
            self._decoder.push(stream.state, payload)
            self._primed[key] = self._decoder.snapshot(stream.state)
            while len(self._primed) > PRIMED_VOICES:
                self._primed.popitem(last=False)
            return
        if kind == "frame":
            sink.add_codes(payload)
            live = self._streams.get(seq_id)
            if live is None:
                live = self._streams[seq_id] = _Stream(self._decoder.new_stream())
            live.sink = sink
            live.pending.append(payload)  # decoded in its listener's turn (_run)
            return
        if kind == "close" and (live := self._streams.get(seq_id)) is not None and live.pending:
            live.sink, live.closing = sink, True  # decoded in its listener's turn (_run), then finished
            return
        self._streams.pop(seq_id, None)
        self._pacing.stream_ended(seq_id)  # its last job
        if kind == "close":
            sink.finish()
        elif kind == "fail":
            sink.fail(payload)
        else:  # aborted: by the caller, who reads no more, or by a shutdown, whose caller must not take it as done
            sink.fail(RequestFailed("the request was aborted"))


def _refuse(jobs: list[Job]) -> None:
    """Jobs the codec thread will not do (it has stopped): the request of each fails, once."""
    failed = set()
    for kind, seq_id, sink, payload in jobs:
        if sink is not None and seq_id not in failed:
            failed.add(seq_id)
            sink.fail(payload if kind == "fail" else RequestFailed("the engine stopped"))


def _waits(stream: _Stream, held: HeldBack, ahead_waits: bool) -> bool:
    """Whether the stream's next block waits now: its listener is held back (`held`), or it is a reply's next
    sentence made ahead of need, past its first block, while the engine runs steps a listener waits for
    (`ahead_waits`). Its audio plays only after the sentence heard now, and decoded meanwhile it took the cores from
    that sentence's steps: a lone two-sentence announcement (0.6b INT4, 2 Zen 3 AVX2 cores) made its first sentence
    at ~0.85x real time and gapped 0.3-1.0 s where one sentence of the same length played whole. Its first block still
    goes early, so that it is ready when the listener reaches it; the rest follow once it is needed (the sentence
    before has all gone out) or the steps are quiet."""
    sink = stream.sink
    assert sink is not None  # has_work
    return held(sink.clock) or (ahead_waits and not sink.needed_now and stream.blocks_out > 0)


def _urgency(clock: PlaybackClock | None) -> float:
    """Sorts a ready stream: no audio written yet first, then the least slack. Sinks without a playback clock
    (offline callers, tests) count as urgent."""
    slack = clock.slack() if clock is not None else None
    return float("-inf") if slack is None else slack


def pcm16(audio: np.ndarray) -> bytes:
    return (np.clip(np.asarray(audio).reshape(-1), -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()
