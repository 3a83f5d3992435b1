"""An uploaded clip made ready for cloning: decoded (WAV, FLAC, MP3, OGG: libsndfile through soundfile), checked
against what the model can use, trimmed of the silence around it, mixed to mono and stored as 16-bit WAV at the
rate the model's encoders take (24 kHz), which frontend/clone.py reads.

The limits, each with a message that says what to do:
- sample rate at least MIN_RATE: the speaker encoder listens up to 12 kHz; a narrow-band clip (8 kHz phone audio)
  would make a muffled voice.
- at least MIN_SECONDS once silence is trimmed, with MIN_SOUND_SECONDS of it louder than the silence floor: the
  reference's "3-second" cloning; at most MAX_SECONDS (an in-context clone puts the clip's codes, 12.5 a second, and
  its transcript into every request's prompt).
- not silent: the loudest 20 ms above SILENT_DBFS.
- a transcript unless the voice is made from the speaker embedding alone; no longer than anyone could say in the
  clip (TRANSCRIPT_CHARS_PER_SECOND) nor MAX_TRANSCRIPT characters.
The upload's size is bounded before it is read (studio.max_upload_mb), and its decoded length before it is decoded
(MAX_DECODED_SECONDS), so a small file of a long, highly compressed recording cannot fill the memory.
"""
from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import numpy as np

from wyoming_chorus.frontend.clone import resample

MIN_RATE = 16000
MIN_SECONDS = 3.0
MIN_SOUND_SECONDS = 1.5
MAX_SECONDS = 30.0
MAX_DECODED_SECONDS = 120.0  # silence around the clip included
SILENT_DBFS = -50.0
QUIET_BELOW_PEAK_DB = 40.0  # 20 ms frames this far below the loudest one count as silence
MARGIN_SECONDS = 0.2  # silence kept before and after the sound
MAX_TRANSCRIPT = 1000
TRANSCRIPT_CHARS_PER_SECOND = 25  # fast speech is ~15 characters a second in English
_FRAME_SECONDS = 0.02


class ClipProblem(ValueError):
    """Why a clip (or its transcript) cannot make a voice, said to the household."""


@dataclass(frozen=True)
class PreparedClip:
    wav: bytes          # 16-bit mono PCM WAV at the model's rate
    seconds: float      # its length
    text: str | None    # the transcript, or None: the speaker embedding alone


def prepare_clip(data: bytes, text: str | None, voice_only: bool, rate: int) -> PreparedClip:
    """`data` (an uploaded file) checked and made into a clip at `rate`; ClipProblem says why it cannot be."""
    samples, source_rate = decode(data)
    samples = trim(samples, source_rate)
    seconds = len(samples) / source_rate
    if seconds > MAX_SECONDS:
        raise ClipProblem(f"the clip has {seconds:.1f} s of sound; at most {MAX_SECONDS:g} s can be used: cut it to "
                          "5-15 s of one person speaking")
    text = check_transcript(text, voice_only, seconds)
    pcm = np.clip(np.round(resample(samples, source_rate, rate) * 32767), -32768, 32767).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(pcm.tobytes())
    return PreparedClip(out.getvalue(), seconds, text)


def decode(data: bytes) -> tuple[np.ndarray, int]:
    """Mono float32 samples and their rate."""
    import soundfile  # only the studio decodes uploads

    try:
        with soundfile.SoundFile(io.BytesIO(data)) as audio:
            rate, frames = audio.samplerate, audio.frames
            if rate < MIN_RATE:
                raise ClipProblem(f"the clip's sample rate is {rate} Hz; at least {MIN_RATE} Hz is needed (the "
                                  "model listens up to 12 kHz): record or export it at 24 or 48 kHz")
            if frames > MAX_DECODED_SECONDS * rate:
                raise ClipProblem(f"the clip is {frames / rate:.0f} s long; upload at most {MAX_SECONDS:g} s of "
                                  "one person speaking")
            samples = audio.read(dtype="float32", always_2d=True)
    except (RuntimeError, TypeError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise ClipProblem(f"the file is not audio that can be read ({error}); upload a WAV, FLAC, MP3 or OGG "
                          "file") from None
    if not len(samples):
        raise ClipProblem("the file holds no audio")
    return samples.mean(axis=1, dtype=np.float32), rate


def trim(samples: np.ndarray, rate: int) -> np.ndarray:
    """The clip without the silence before and after its sound (a margin kept); ClipProblem if there is too little
    sound in it."""
    frame = max(1, int(rate * _FRAME_SECONDS))
    count = len(samples) // frame
    if count == 0:
        raise ClipProblem(f"the clip is {len(samples) / rate:.2f} s long; at least {MIN_SECONDS:g} s of speech is "
                          "needed")
    rms = np.sqrt(np.mean(samples[:count * frame].reshape(count, frame).astype(np.float64) ** 2, axis=1))
    loudest = 20 * np.log10(max(float(rms.max()), 1e-10))
    if loudest < SILENT_DBFS:
        level = "no sound at all" if loudest < -120 else f"its loudest moment is {loudest:.0f} dBFS"
        raise ClipProblem(f"the clip is silent ({level}): check the microphone or the file")
    loud = np.flatnonzero(20 * np.log10(np.maximum(rms, 1e-10)) > loudest - QUIET_BELOW_PEAK_DB)
    sound = len(loud) * _FRAME_SECONDS
    margin = int(MARGIN_SECONDS * rate)
    start, end = max(0, loud[0] * frame - margin), min(len(samples), (loud[-1] + 1) * frame + margin)
    if (end - start) / rate < MIN_SECONDS or sound < MIN_SOUND_SECONDS:
        raise ClipProblem(f"the clip has only {sound:.1f} s of sound in {(end - start) / rate:.1f} s; at least "
                          f"{MIN_SECONDS:g} s of speech is needed (5-15 s is best)")
    return samples[start:end]


def check_transcript(text: str | None, voice_only: bool, seconds: float) -> str | None:
    """The transcript to keep: None for a voice made from the speaker embedding alone."""
    if voice_only:
        return None
    text = " ".join((text or "").split())
    if not text:
        raise ClipProblem("type what the clip says (its transcript), or choose to clone the voice alone without it")
    limit = min(MAX_TRANSCRIPT, int(TRANSCRIPT_CHARS_PER_SECOND * seconds) + 20)
    if len(text) > limit:
        raise ClipProblem(f"the transcript has {len(text)} characters, more than anyone says in {seconds:.1f} s "
                          f"(at most {limit}): type only what the clip says")
    return text
