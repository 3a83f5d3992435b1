"""One request's state from arrival to its last frame: the object the scheduler, the block manager and the
runner wrapper share. It holds no policy; the scheduler moves it between states."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

import numpy as np

from wyoming_chorus.playback_clock import PlaybackClock

NUM_CODE_GROUPS = 16


class SequenceStatus(Enum):
    WAITING = "waiting"  # holds no block
    RUNNING = "running"  # in the batch: holds blocks and computes rows each step
    PARKED = "parked"  # holds its blocks but is out of the batch: its next frame waits for text (streaming input)
    FINISHED = "finished"


class FinishReason(Enum):
    EOS = "eos"
    FRAME_CAP = "frame_cap"
    ABORTED = "aborted"
    REJECTED = "rejected"  # refused on arrival because the waiting queue is full (counted apart from errors)
    ERROR = "error"

    @property
    def status(self) -> str:
        """chorus_sentences_total's status label: a frame cap is a complete, if cut, reply."""
        return "ok" if self in (FinishReason.EOS, FinishReason.FRAME_CAP) else self.value


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.9  # <= 0: greedy
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05
    sub_temperature: float = 0.9  # code predictor; <= 0: greedy
    sub_top_k: int = 50
    sub_top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class StepOutput:
    """What the runner returns for one step, one row per scheduled entry (rows of non-emitting entries are junk)."""
    codes: np.ndarray  # int32 [S, 16]
    is_eos: np.ndarray  # bool [S]
    next_embeds: np.ndarray  # float32 [S, H]
    logits: np.ndarray | None = None  # float32 [S, vocab], only when asked for (tests)


class Sequence:
    """Rows are the talker's input embeddings: the prompt, then one row per generated frame (the frame's codes
    embedded, plus the text track). Rows [0, num_computed) have their KV cached in block_table's blocks.
    Computing the last row emits frame len(frames); its next_embeds becomes the next row. After a preemption
    num_computed is 0 and every row is prefilled again, so the recompute emits the next new frame, never an old one.
    """

    def __init__(self, seq_id: int, prompt: np.ndarray, trailing_text: np.ndarray, pad_text: np.ndarray,
                 frame_cap: int, sampling: SamplingParams = SamplingParams()):
        prompt = np.asarray(prompt, dtype=np.float32)
        if prompt.ndim != 2 or len(prompt) == 0:
            raise ValueError(f"prompt must be [P>0, H], got shape {prompt.shape}")
        hidden = prompt.shape[1]
        if np.ndim(trailing_text) != 2 or np.shape(trailing_text)[1] != hidden or np.shape(pad_text) != (hidden,):
            raise ValueError(f"trailing_text must be [L, {hidden}] and pad_text [{hidden}], "
                             f"got {np.shape(trailing_text)} and {np.shape(pad_text)}")
        if frame_cap < 1:
            raise ValueError(f"frame_cap must be at least 1, got {frame_cap}")
        self.id = seq_id
        # Generated ahead of need (a reply's next sentence while the current one is heard): admitted only when no
        # other request waits, and the first to give its place up to one that does. promote() ends it.
        self.deferred = False
        # The reply's playback as its listener hears it (None: no listener keeps time, e.g. synth or a benchmark).
        self.clock: PlaybackClock | None = None
        # In-context cloning: the clip's codes [n, 16], decoded before the generated frames and their audio dropped.
        self.codec_prefix: np.ndarray | None = None
        # The voice, the language code it speaks (None: the model decides) and whether that was told from the text.
        self.voice: str | None = None
        self.language: str | None = None
        self.language_detected = False
        self.trailing_text = np.asarray(trailing_text, dtype=np.float32)
        # Streaming text input: more text rows may still come (feed_text); until they do, a request whose next
        # frame needs one is awaiting text. Closed, every later frame takes pad_text.
        self.text_open = False
        self.pad_text = np.asarray(pad_text, dtype=np.float32)
        self.frame_cap = frame_cap
        self.sampling = sampling
        self.status = SequenceStatus.WAITING
        self.finish_reason: FinishReason | None = None
        self.error: str | None = None
        self.num_prompt_rows = len(prompt)
        self.num_computed = 0
        self.block_table: list[int] = []
        self.frames: list[np.ndarray] = []  # int32 [16] each
        self.c0_history: list[int] = []  # codebook-0 codes, for the repetition penalty
        self._rows = prompt.copy()  # capacity doubles as frame rows arrive; _num_rows are valid
        self._num_rows = len(prompt)
        self._prefix_hashes: tuple[int, list[bytes]] | None = None

    @property
    def num_rows(self) -> int:
        return self._num_rows

    @property
    def num_uncomputed(self) -> int:
        return self._num_rows - self.num_computed

    @property
    def max_rows(self) -> int:
        """Rows whose KV is cached when the last allowed frame is emitted: the most blocks this request can hold."""
        return self.num_prompt_rows + self.frame_cap - 1

    @property
    def awaiting_text(self) -> bool:
        """The next frame's input needs a text row that has not arrived: no step can emit for it until one does."""
        return self.text_open and len(self.frames) >= len(self.trailing_text)

    def feed_text(self, rows: np.ndarray, close: bool) -> None:
        """More of the text track (streaming input); `close`: it is all there (`rows` then ends with tts_eos)."""
        if not self.text_open:
            raise ValueError(f"request {self.id}: its text is already complete")
        rows = np.asarray(rows, dtype=np.float32).reshape(-1, self.pad_text.shape[0])
        if len(rows):
            self.trailing_text = np.concatenate([self.trailing_text, rows])
        self.text_open = not close

    @property
    def is_finished(self) -> bool:
        return self.status is SequenceStatus.FINISHED

    def rows(self, start: int, n: int) -> np.ndarray:
        if start < 0 or n < 1 or start + n > self._num_rows:
            raise ValueError(f"rows [{start}, {start + n}) outside [0, {self._num_rows})")
        return self._rows[start:start + n]

    def prefix_hashes(self, block_size: int) -> list[bytes]:
        """The hash of each full block of prompt rows, chained: block i's covers every prompt row up to its end.
        The rows' bytes are hashed: two prompts share a block exactly when their rows so far are bit for bit equal."""
        if self._prefix_hashes is None or self._prefix_hashes[0] != block_size:
            digests, chain = [], b""
            for start in range(0, self.num_prompt_rows - block_size + 1, block_size):
                block = np.ascontiguousarray(self._rows[start:start + block_size])
                chain = hashlib.blake2b(chain + block.tobytes(), digest_size=16).digest()
                digests.append(chain)
            self._prefix_hashes = (block_size, digests)
        return self._prefix_hashes[1]

    def text_for_frame(self, t: int) -> np.ndarray:
        """Text-track embedding added to the input that follows frame t."""
        return self.trailing_text[t] if t < len(self.trailing_text) else self.pad_text

    def append_frame(self, codes: np.ndarray, next_row: np.ndarray) -> None:
        self.frames.append(codes)
        self.c0_history.append(int(codes[0]))
        if self._num_rows == len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        self._rows[self._num_rows] = next_row
        self._num_rows += 1

    def finish(self, reason: FinishReason, error: str | None = None) -> None:
        self.status = SequenceStatus.FINISHED
        self.finish_reason = reason
        self.error = error
