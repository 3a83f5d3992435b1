"""What a Base model's voice cloning takes from a reference clip (voices.clone): its speaker embedding, and for
in-context cloning its codes.

As the reference's create_voice_clone_prompt: the clip is read as mono float32 in [-1, 1] (channels averaged) and
resampled to 24 kHz with soxr's HQ quality (what librosa.resample uses by default). The embedding: the 128-bin
log-mel (frontend/mel.py) through speaker_encoder.xml. The codes: the samples through codec_encoder.xml (the
speech tokenizer's encoder), [frames, 16]. Each is computed once per clip and kept in memory, keyed by the file's
identity, so an edited clip is re-read.
"""
from __future__ import annotations

import os
import wave
from pathlib import Path

import numpy as np
import openvino as ov

from wyoming_chorus.frontend.mel import SAMPLE_RATE, log_mel
from wyoming_chorus.modeldir.manifest import ModelDir


class ClipError(ValueError):
    """A clip that cannot be read or used; the message names the file."""


def read_wav(path: Path) -> tuple[np.ndarray, int]:
    """Mono float32 samples in [-1, 1] and the sample rate of an integer-PCM WAV file (8, 16, 24 or 32 bit)."""
    try:
        with wave.open(str(path), "rb") as clip:
            channels, width, rate = clip.getnchannels(), clip.getsampwidth(), clip.getframerate()
            raw = clip.readframes(clip.getnframes())
    except (OSError, EOFError, wave.Error) as error:
        raise ClipError(f"{path}: not a readable PCM WAV file ({error})") from None
    if width == 1:  # unsigned
        samples = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128) / 128
    elif width == 3:  # packed little-endian 24 bit: widen to 32 bit through the top three bytes
        padded = np.zeros((len(raw) // 3, 4), np.uint8)
        padded[:, 1:] = np.frombuffer(raw, np.uint8).reshape(-1, 3)
        samples = padded.view("<i4").ravel().astype(np.float32) / 2 ** 31
    elif width in (2, 4):
        samples = np.frombuffer(raw, f"<i{width}").astype(np.float32) / 2 ** (8 * width - 1)
    else:
        raise ClipError(f"{path}: {8 * width}-bit samples are not supported")
    samples = samples.reshape(-1, channels).mean(axis=1, dtype=np.float32)
    return samples, rate


def resample(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    if rate == target:
        return samples
    import soxr  # only clips at another rate need it

    return soxr.resample(samples, rate, target, quality="HQ").astype(np.float32)


class _PerClip:
    """A compiled graph run once per clip, its results cached by the file's identity."""

    def __init__(self):
        self._cache: dict[str, tuple[tuple, np.ndarray]] = {}  # resolved path -> (file stamp, result)

    def of_audio(self, samples: np.ndarray, rate: int) -> np.ndarray:
        raise NotImplementedError

    def of_clip(self, path) -> np.ndarray:
        path = Path(path)
        try:
            stat = path.stat()
        except OSError as error:
            raise ClipError(f"{path}: {error.strerror}") from None
        key, stamp = str(path.resolve()), (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        cached = self._cache.get(key)
        if cached is None or cached[0] != stamp:
            try:
                cached = (stamp, self.of_audio(*read_wav(path)))
            except ClipError:
                raise
            except ValueError as error:  # too short for the mel
                raise ClipError(f"{path}: {error}") from None
            # An edited clip replaces its old result; clips deleted since (the voice studio deletes the voices it
            # made, each with a clip of its own) are forgotten: the cache holds the clips that exist, not every clip
            # ever used (it grew by a clip's result per clone / preview / delete cycle).
            self._cache = {known: result for known, result in self._cache.items() if os.path.exists(known)}
            self._cache[key] = cached
        return cached[1]


class SpeakerEmbeddings(_PerClip):
    """speaker_encoder.xml of a Base MODEL_DIR, with each clip's embedding cached."""

    def __init__(self, model: ModelDir, device: str = "CPU"):
        super().__init__()
        self.sample_rate = int((model.manifest.speaker_encoder or {}).get("sample_rate", SAMPLE_RATE))
        if self.sample_rate != SAMPLE_RATE:
            raise ValueError(f"{model.path}: a speaker encoder at {self.sample_rate} Hz; the mel is defined at 24 kHz")
        # f32: one small pass per clip, and the embedding is a prompt row that bf16 would shift.
        self._model = ov.Core().compile_model(model / "speaker_encoder.xml", device,
                                              {"INFERENCE_PRECISION_HINT": "f32"})

    def of_audio(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """f32 [H] embedding of mono float32 audio."""
        mel = log_mel(resample(np.asarray(samples, np.float32), rate, self.sample_rate))
        return self._model({"mel": mel[None]})["embedding"].copy()


class ClipCodes(_PerClip):
    """codec_encoder.xml of a Base MODEL_DIR (in-context cloning), with each clip's codes cached."""

    def __init__(self, model: ModelDir, device: str = "CPU"):
        super().__init__()
        self.sample_rate = int((model.manifest.codec_encoder or {}).get("sample_rate", SAMPLE_RATE))
        # f32: the codes are nearest-codebook decisions, which a lower precision can flip.
        self._model = ov.Core().compile_model(model / "codec_encoder.xml", device,
                                              {"INFERENCE_PRECISION_HINT": "f32"})

    def of_audio(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """i64 [frames, 16] codes of mono float32 audio, one frame per 1920 samples at 24 kHz (rounded up)."""
        audio = resample(np.asarray(samples, np.float32), rate, self.sample_rate)
        if not len(audio):
            raise ValueError("the clip is empty")
        return self._model({"audio": audio[None, None]})["codes"][0].T.copy()
