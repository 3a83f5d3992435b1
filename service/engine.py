"""The engine: one thread that runs schedule -> runner.step -> update, and a codec thread that turns frames into PCM.

Asyncio callers talk to it only through `synthesize()`, an async iterator of PCM chunks. Requests cross into the
engine thread through an inbox (new sequences, aborts) that the loop drains at every step boundary, so the scheduler
and block manager are only ever touched by one thread and need no locks of their own.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np

from service.blocks import BlockManager
from service.codec_output import CodecWorker, PcmSink
from service.config import EngineSettings, VoicesSettings
from service.device import cpu_facts
from service.errors import InvalidText, QueueFull, RequestFailed
from service.metrics import Metrics
from service.model.builtin import resolve_model
from service.model.clone import ClipCodes, ClipError, SpeakerEmbeddings
from service.model.language import choose_language, load_detector
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


@dataclass
class _Inbox:
    """What asyncio tasks hand to the engine thread; drained at every step boundary."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    wake: threading.Condition = field(init=False)
    new: list[Sequence] = field(default_factory=list)
    aborts: list[int] = field(default_factory=list)
    promotions: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.wake = threading.Condition(self.lock)


class Engine:
    def __init__(self, settings: EngineSettings, metrics: Metrics | None = None,
                 voices: VoicesSettings | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        model_dir = resolve_model(settings.model, settings.data_dir)
        self._model_dir = model_dir
        self._random_model = bool(json.loads((model_dir / "chorus.json").read_text()).get("random_weights"))
        self._voices = Voices(model_dir, voices or VoicesSettings())
        self._prompts = PromptBuilder(model_dir)
        # Base: cloned voices speak with their clip's speaker embedding (computed on first use, then cached).
        self._embeddings = (SpeakerEmbeddings(model_dir) if (model_dir / "speaker_encoder.xml").is_file()
                            else None)
        # ... and, when the voice has the clip's transcript, the clip's codes (in-context cloning).
        self._clip_codes = ClipCodes(model_dir) if (model_dir / "codec_encoder.xml").is_file() else None
        self._prompt_lock = threading.Lock()
        self._runner = PagedRunner(
            model_dir,
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
        self._codec = CodecWorker(model_dir, settings.inference_precision)
        self._sinks: dict[int, PcmSink] = {}
        self._inbox = _Inbox()
        self._ids = itertools.count()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self.metrics.kv_blocks_total.set(self._runner.num_blocks)

    def summary(self) -> list[str]:
        """What is being served, for the start-up log: the model, the device and its precision, the KV pool."""
        manifest = json.loads((self._model_dir / "chorus.json").read_text())
        random_note = ": RANDOM weights, its voices make noise, not speech" if manifest.get("random_weights") else ""
        device = self._runner.device
        if device == "CPU":
            facts = cpu_facts()
            device = f"CPU ({facts.isa}), inference {facts.inference_precision(self.settings.inference_precision)}"
        blocks, block = self._runner.num_blocks, self._runner.block_size
        # A typical reply: the prompt (~30 rows) and 10 s of speech at 12.5 frames per second.
        per_room = -(-(30 + 125) // block)
        return [
            f"model {manifest['name']} ({manifest['model_type']}, {manifest.get('weights', 'float')} weights) "
            f"from {self._model_dir}{random_note}",
            f"device {device}, KV cache {self._runner.kv_precision}: {blocks} blocks of {block} tokens "
            f"({blocks * block} tokens, {blocks * self._runner.bytes_per_block / 2**20:.0f} MiB), "
            f"room for {blocks // per_room} replies of 10 s at once ({self.settings.max_batch} run in one batch)",
        ]

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        self._warm_up()
        self._codec.start()
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
        """Abort whatever still runs, then stop both threads."""
        with self._inbox.lock:
            self._inbox.aborts.extend(self._sinks)
            self._stopping.set()
            self._inbox.wake.notify()
        self._thread.join(timeout)
        self._codec.stop(timeout)

    def stats(self) -> EngineStats:
        return EngineStats(
            blocks_total=self.blocks.num_blocks,
            blocks_used=self.blocks.num_used,
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting),
            alive=self._thread.is_alive() and self._codec.is_alive(),
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
        with self._inbox.lock:
            if not (self._thread.is_alive() and self._codec.is_alive()) or self._stopping.is_set():
                raise RequestFailed("the engine is not running")
            self._sinks[seq.id] = sink
            if seq.codec_prefix is not None:  # queued before any of its frames can be
                self._codec.prime(seq.id, sink, seq.codec_prefix)
            self._inbox.new.append(seq)
            self._inbox.wake.notify()
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
        with self._inbox.lock:
            self._inbox.promotions.append(seq_id)
            self._inbox.wake.notify()

    def abort(self, seq_id: int) -> None:
        with self._inbox.lock:
            self._inbox.aborts.append(seq_id)
            self._inbox.wake.notify()

    def _make_sequence(self, text, voice, speaker, language, seed) -> Sequence:
        from service.model.clean_text import clean_text  # TODO(lead): move to the imports at the top
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
            if self._random_model:  # it never says eos: without a cap, 15-60 s of noise per sentence
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
        try:
            while True:
                if not self._drain_inbox():
                    return
                entries = self.scheduler.schedule()
                if not entries:
                    self._idle()
                    continue
                started = time.perf_counter()
                output = self._runner.step(entries)
                result = self.scheduler.update(entries, output)
                self._observe_step(len(entries), time.perf_counter() - started, result)
                for seq, codes in result.new_frames:
                    self._sinks[seq.id].codes_seen(codes)
                    self._codec.push(seq.id, self._sinks[seq.id], codes)
                for seq in result.finished:
                    self._finish(seq)
        except Exception:  # a bug in the loop must end every reply, not hang the callers
            _LOG.exception("engine loop crashed")
            with self._inbox.lock:
                sinks, self._sinks = self._sinks, {}
            for sink in sinks.values():
                sink.fail(RequestFailed("the engine stopped"))

    def _drain_inbox(self) -> bool:
        with self._inbox.lock:
            new, self._inbox.new = self._inbox.new, []
            aborts, self._inbox.aborts = self._inbox.aborts, []
            promotions, self._inbox.promotions = self._inbox.promotions, []
            stopping = self._stopping.is_set()
        for seq in new:
            if not self.scheduler.add(seq):  # refused on the spot: queue full, or it could never fit the pool
                self._finish(seq)
        for seq_id in promotions:
            self.scheduler.promote(seq_id)
        if aborts:
            for seq in self.scheduler.finish_requests(aborts, FinishReason.ABORTED):
                self._finish(seq)
        return not (stopping and not self.scheduler.has_work())

    def _idle(self) -> None:
        self.scheduler.check_integrity()
        self._update_gauges()
        with self._inbox.lock:
            if not (self._inbox.new or self._inbox.aborts or self._inbox.promotions or self._stopping.is_set()):
                self._inbox.wake.wait(timeout=1.0)

    def _finish(self, seq: Sequence) -> None:
        with self._inbox.lock:  # stop() reads the sinks from another thread
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

