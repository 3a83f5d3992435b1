"""The engine: one thread that runs schedule -> runner.step -> update, and a codec thread that turns frames into PCM.

Asyncio callers talk to it only through `synthesize()`, an async iterator of PCM chunks. Requests cross into the
engine thread through an inbox (new sequences, aborts) that the loop drains at every step boundary, so the scheduler
and block manager are only ever touched by one thread and need no locks of their own.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import random
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import numpy as np

from service.blocks import BlockManager
from service.codec_output import CodecWorker, PcmSink
from service.config import EngineSettings, VoicesSettings
from service.device import cpu_facts
from service.engine_messages import Abort, Add, CodecFailed, Message, Promote, Stop
from service.errors import InvalidText, QueueFull, RequestFailed
from service.metrics import Metrics
from service.model.builtin import resolve_model
from service.model.clean_text import clean_text
from service.model.clone import ClipCodes, ClipError, SpeakerEmbeddings
from service.model.language import choose_language, load_detector
from service.model.manifest import ModelDir
from service.model.normalize import normalize
from service.model.prompt import Prompt, PromptBuilder, PromptError
from service.model.voices import VoiceInfo, Voices
from service.runner import PagedRunner, RunnerOptions
from service.scheduler import Scheduler
from service.sequence import FinishReason, SamplingParams, Sequence

_LOG = logging.getLogger(__name__)

# A missing eos must not run away: cap frames by the text's length. Natural speech needs about 4 frames (320 ms)
# per text token; twice that plus two seconds leaves room for slow speech without letting a runaway go far.
_FRAMES_PER_TEXT_TOKEN = 8
_FRAMES_BASE = 25

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


class Engine:
    def __init__(self, settings: EngineSettings, metrics: Metrics | None = None,
                 voices: VoicesSettings | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        model = self.model = ModelDir(resolve_model(settings.model, settings.data_dir))
        self._voices = Voices(model, voices or VoicesSettings())
        self._prompts = PromptBuilder(model)
        # Base: cloned voices speak with their clip's speaker embedding (computed on first use, then cached).
        self._embeddings = (SpeakerEmbeddings(model) if model.has("speaker_encoder.xml")
                            else None)
        # ... and, when the voice has the clip's transcript, the clip's codes (in-context cloning).
        self._clip_codes = ClipCodes(model) if model.has("codec_encoder.xml") else None
        self._prompt_lock = threading.Lock()
        self._runner = PagedRunner(
            model,
            RunnerOptions(
                device=settings.device,
                kv_precision=settings.kv_precision,
                inference_precision=settings.inference_precision,
                num_blocks=settings.max_cache_blocks,
                kv_cache_bytes=settings.kv_cache_mb << 20,
            ),
        )
        self.sample_rate = self._prompts.sample_rate
        self.blocks = BlockManager(self._runner.num_blocks, self._runner.block_size)
        self.scheduler = Scheduler(
            self.blocks,
            max_running=settings.max_batch,
            max_waiting=settings.max_waiting,
            token_budget=settings.step_token_budget,
            policy=settings.policy,
        )
        self._codec = CodecWorker(model, settings.inference_precision, on_failure=self._codec_failed)
        # Owned by the engine thread alone: the sink of every request it holds, and whether it is stopping.
        self._sinks: dict[int, PcmSink] = {}
        self._stopping = False
        # The one way into the engine thread. `_accepting` says whether that thread will still read a message put
        # now: it is set at start, and cleared (under `_life`) when the thread ends, before it fails whatever is
        # left, so that no request can slip in behind the last look and wait for ever.
        self._inbox: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._life = threading.Lock()
        self._accepting = False
        self._ids = itertools.count()
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self.metrics.kv_blocks_total.set(self._runner.num_blocks)

    def summary(self) -> list[str]:
        """What is being served, for the start-up log: the model, the device and its precision, the KV pool."""
        manifest = self.model.manifest
        random_note = ": RANDOM weights, its voices make noise, not speech" if manifest.random_weights else ""
        device = self._runner.device
        if device == "CPU":
            facts = cpu_facts()
            device = f"CPU ({facts.isa}), inference {facts.inference_precision(self.settings.inference_precision)}"
        blocks, block = self._runner.num_blocks, self._runner.block_size
        # A typical reply: the prompt (~30 rows) and 10 s of speech at 12.5 frames per second.
        per_room = -(-(30 + 125) // block)
        return [
            f"model {manifest.name} ({manifest.model_type}, {manifest.weights} weights) "
            f"from {self.model.path}{random_note}",
            f"device {device}, KV cache {self._runner.kv_precision}: {blocks} blocks of {block} tokens "
            f"({blocks * block} tokens, {blocks * self._runner.bytes_per_block / 2**20:.0f} MiB), "
            f"room for {blocks // per_room} replies of 10 s at once ({self.settings.max_batch} run in one batch)",
        ]

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Blocks for the warm-up (seconds on a big model): call it off the event loop."""
        self._warm_up()
        self._codec.start()
        self._accepting = True
        self._thread.start()

    def _warm_up(self) -> None:
        """The first infer of each compiled model JIT-compiles its kernels (seconds on a big model): pay that here,
        with a two-frame request, not in the first room's time to first audio."""
        # The bare prompt: the default voice may be one that cannot speak yet (a cloned voice).
        seq = self._sequence(self._prompts.build("Hello."), seed=0, frame_cap=2)
        self.scheduler.add(seq)
        while self.scheduler.has_work():
            entries = self.scheduler.schedule()
            self.scheduler.update(entries, self._runner.step(entries))
        self._codec.warm_up(np.stack(seq.frames))
        self.scheduler.check_integrity()
        load_detector()  # 0.5-1 s: here, not in the first room's time to first audio

    def stop(self, timeout: float = 10.0) -> None:
        """Abort whatever still runs (every reader sees an error), then stop both threads."""
        self._send(Stop())
        self._thread.join(timeout)
        self._codec.stop(timeout)

    @property
    def alive(self) -> bool:
        """Whether a request made now will be served: the one place that decides it."""
        return self._accepting and self._thread.is_alive() and self._codec.is_alive()

    def stats(self) -> EngineStats:
        return EngineStats(
            blocks_total=self.blocks.num_blocks,
            blocks_used=self.blocks.num_used,
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting),
            alive=self.alive,
        )

    @property
    def voices(self) -> tuple[VoiceInfo, ...]:
        """The installed voices, the default first; edits to the config file's voices section show up here."""
        return self._voices.current()

    # ---- the asyncio side ------------------------------------------------------------------------------------
    async def synthesize(
        self,
        text: str,
        voice: str | None = None,
        speaker: str | None = None,
        language: str | None = None,
        seed: int | None = None,
        codes_out: list[np.ndarray] | None = None,
        needed: asyncio.Event | None = None,
        about: dict | None = None,
    ) -> AsyncIterator[bytes]:
        """Yields int16 little-endian mono PCM at `sample_rate` as it is generated.

        Closing the iterator early (or cancelling the task that reads it) aborts the request; its blocks are freed
        at the next step boundary. `codes_out`, when given, receives each frame's 16 codes (for --save-codes).
        `needed`, when given and not yet set, marks audio generated ahead of need: the scheduler runs it only where
        it takes no place another request waits for, until the event is set. `about`, when given, receives the
        voice, language and whether the language was told from the text ("voice", "language", "language_detected").
        """
        seq = await asyncio.to_thread(self._make_sequence, text, voice, speaker, language, seed)
        if about is not None:
            about.update(voice=seq.voice, language=seq.language, language_detected=seq.language_detected)
        seq.deferred = needed is not None and not needed.is_set()
        sink = PcmSink(asyncio.get_running_loop(), time.monotonic(), codes_out)
        if not self._send(Add(seq, sink)):
            raise RequestFailed("the engine is not running")
        promoter = asyncio.create_task(self._promote_when(needed, seq.id)) if seq.deferred else None
        try:
            async for chunk in sink:
                if chunk is None:
                    return
                if not sink.first_audio_seen:
                    sink.first_audio_seen = True
                    if promoter is None:  # audio made ahead of need says nothing of how long a listener waited
                        self.metrics.time_to_first_audio.observe(time.monotonic() - sink.submitted)
                yield chunk
        finally:
            if promoter is not None:
                promoter.cancel()
            if not sink.done:  # the caller stopped reading or was cancelled
                self.abort(seq.id)

    async def _promote_when(self, needed: asyncio.Event, seq_id: int) -> None:
        await needed.wait()
        self._send(Promote(seq_id))

    def abort(self, seq_id: int) -> None:
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

    def _make_sequence(self, text, voice, speaker, language, seed) -> Sequence:
        text = clean_text(text)
        if not text:
            raise InvalidText("the text is empty")
        if len(text) > self.settings.max_text_length:  # what the client sent, not what normalising made of it
            raise InvalidText(f"the text has {len(text)} characters; the limit is {self.settings.max_text_length}")
        chosen = self._voices.find(voice, speaker)
        clone_layout, ref_codes = {}, None
        if chosen.clip is not None:
            if self._embeddings is None:
                raise RequestFailed(f"voice {chosen.name!r}: the model has no speaker encoder; re-export it")
            try:
                embedding = self._embeddings.of_clip(chosen.clip.wav)
                # In-context cloning needs the clip's transcript, and codec_encoder.xml (older exports lack it:
                # their clones speak from the embedding alone).
                if chosen.clip.text and self._clip_codes is not None:
                    ref_codes = self._clip_codes.of_clip(chosen.clip.wav)
            except ClipError as error:
                raise RequestFailed(f"voice {chosen.name!r}: {error}") from error
            # generate_voice_clone's default: the text is fed one token per frame.
            clone_layout = {"speaker_embedding": embedding, "non_streaming_mode": False}
            if ref_codes is not None:
                clone_layout.update(ref_text=chosen.clip.text, ref_codes=ref_codes)
        # The request's language, else the voice's, else the text's among the voice's languages (Home Assistant sends
        # none); None lets the model decide, with the English number rules.
        code, detected = choose_language(language, chosen.language, text, chosen.languages)
        model_language = self._voices.model_language(code)
        spoken = normalize(text, code)
        try:
            with self._prompt_lock:
                prompt = self._prompts.build(spoken, speaker=chosen.speaker, language=model_language,
                                             instruct=chosen.instruct, **clone_layout)
        except PromptError as error:  # text that cannot be put into the prompt frame
            raise InvalidText(str(error)) from error
        seq = self._sequence(prompt, seed)
        seq.codec_prefix = ref_codes
        seq.voice, seq.language, seq.language_detected = chosen.name, code, detected
        return seq

    def _sequence(self, prompt: Prompt, seed: int | None, frame_cap: int | None = None) -> Sequence:
        gen = self._prompts.generation
        greedy = self.settings.greedy
        if seed is None:
            seed = self.settings.seed if self.settings.seed is not None else random.getrandbits(63)
        sampling = SamplingParams(
            temperature=0.0 if greedy else gen["temperature"],
            top_k=gen["top_k"],
            top_p=gen["top_p"],
            repetition_penalty=gen["repetition_penalty"],
            sub_temperature=0.0 if greedy else gen["subtalker_temperature"],
            sub_top_k=gen["subtalker_top_k"],
            sub_top_p=gen["subtalker_top_p"],
            seed=seed,
        )
        if frame_cap is None:
            frame_cap = min(self.settings.max_frames, _FRAMES_BASE + _FRAMES_PER_TEXT_TOKEN * prompt.n_text_tokens)
            if self.model.manifest.random_weights:  # it never says eos: without a cap, 15-60 s of noise per sentence
                frame_cap = min(frame_cap, self.settings.random_model_frames)
        return Sequence(
            seq_id=next(self._ids),
            prompt=prompt.prefill,
            trailing_text=prompt.trailing,
            pad_text=prompt.pad,
            sampling=sampling,
            frame_cap=frame_cap,
        )

    # ---- the engine thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        """schedule -> step -> update until stopped; messages are read between steps (blocking while idle)."""
        idle = False
        try:
            while not (self._stopping and not self.scheduler.has_work()):
                self._read_messages(wait=idle)
                entries = self.scheduler.schedule()
                idle = not entries
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
            output = self._runner.step(entries)
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
            sink = self._sinks[seq.id]
            sink.codes_seen(codes)
            self._codec.push(seq.id, sink, codes)
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
                self._codec.prime(message.seq.id, message.sink, message.seq.codec_prefix)
            if not self.scheduler.add(message.seq):  # refused on the spot: queue full, or it never fits the pool
                self._finish(message.seq)
        elif isinstance(message, Abort):
            self._end([message.seq_id], FinishReason.ABORTED)
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
            if self._codec.is_alive():
                self._codec.fail(seq_id, sink, stopped)  # behind its frames, in order
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
        if sink is None:
            return
        self.metrics.sentences_total.labels(status=_STATUS[seq.finish_reason]).inc()
        if seq.finish_reason is FinishReason.REJECTED:
            self._codec.fail(seq.id, sink, QueueFull(seq.error or "the server is busy"))
        elif seq.finish_reason is FinishReason.ERROR:
            self._codec.fail(seq.id, sink, RequestFailed(seq.error or "the request failed"))
        elif seq.finish_reason is FinishReason.ABORTED:
            self._codec.drop(seq.id, sink)
        else:
            self._codec.close(seq.id, sink)

    def _observe_step(self, batch: int, seconds: float, result) -> None:
        m = self.metrics
        m.batch_size.observe(batch)
        m.step_seconds.observe(seconds)
        m.frames_total.inc(len(result.new_frames))
        if result.preempted:
            m.preemptions_total.inc(len(result.preempted))
        self._update_gauges()

    def _update_gauges(self) -> None:
        m = self.metrics
        m.kv_blocks_used.set(self.blocks.num_used)
        m.requests_running.set(len(self.scheduler.running))
        m.requests_waiting.set(len(self.scheduler.waiting))

