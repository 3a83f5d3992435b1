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
What decoding may cost is bounded before it starts, from the file's header: the upload's size (studio.max_upload_mb),
its rate (MAX_RATE), channels (MAX_CHANNELS) and length (MAX_DECODED_SECONDS). Then it is decoded a block at a time,
each block mixed to mono and resampled to the model's rate as it comes, and the decoded length counted against the
same budget (a header can lie): what is held is at most MAX_DECODED_SECONDS of mono audio at the model's rate (11.5
MB), whatever the file says. (Decoded whole, a 0.7 MB FLAC of 8 channels at 655 kHz was 2.4 GB of float32.) Samples
that are not numbers (NaN, infinity: float WAVs can hold them) are refused as bad audio.
"""
from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIN_RATE = 16000
MAX_RATE = 192000  # the highest rate studio recorders use
MAX_CHANNELS = 8  # 7.1 surround; a voice clip is mono or stereo
BLOCK_SECONDS = 1.0  # decoded at a time
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


def prepare_clip(source: bytes | Path, text: str | None, voice_only: bool, rate: int) -> PreparedClip:
    """`source` (an uploaded file, or its bytes) checked and made into a clip at `rate`; ClipProblem says why it
    cannot be."""
    samples = trim(decode(source, rate), rate)
    seconds = len(samples) / rate
    if seconds > MAX_SECONDS:
        raise ClipProblem(f"the clip has {seconds:.1f} s of sound; at most {MAX_SECONDS:g} s can be used: cut it to "
                          "5-15 s of one person speaking")
    text = check_transcript(text, voice_only, seconds)
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(pcm.tobytes())
    return PreparedClip(out.getvalue(), seconds, text)


def decode(source: bytes | Path, rate: int) -> np.ndarray:
    """Mono float32 samples at `rate`, decoded a block at a time within the budget."""
    import soundfile  # only the studio decodes uploads
    import soxr

    try:
        with soundfile.SoundFile(io.BytesIO(source) if isinstance(source, bytes) else source) as audio:
            source_rate, budget = check_header(audio.samplerate, audio.channels, audio.frames)
            resampler = soxr.ResampleStream(source_rate, rate, 1, dtype="float32", quality="HQ")
            pieces, decoded = [], 0
            for block in audio.blocks(int(source_rate * BLOCK_SECONDS), dtype="float32", always_2d=True):
                decoded += len(block)
                if decoded > budget:
                    raise ClipProblem(too_long(decoded / source_rate))
                if not np.isfinite(block).all():
                    raise ClipProblem("the clip holds samples that are not numbers (NaN or infinity): it is damaged; "
                                      "export it again as 16-bit WAV or FLAC")
                pieces.append(resampler.resample_chunk(block.mean(axis=1, dtype=np.float32)))
            pieces.append(resampler.resample_chunk(np.zeros(0, np.float32), last=True))
    except ClipProblem:
        raise
    except (RuntimeError, TypeError, ValueError) as error:  # soundfile's LibsndfileError is a RuntimeError
        raise ClipProblem(f"the file is not audio that can be read ({error}); upload a WAV, FLAC, MP3 or OGG "
                          "file") from None
    if not decoded:
        raise ClipProblem("the file holds no audio")
    return np.concatenate(pieces)


def check_header(rate: int, channels: int, frames: int) -> tuple[int, int]:
    """The rate and the most frames that may be decoded, from what the header says; ClipProblem if it is over the
    limits."""
    if rate < MIN_RATE:
        raise ClipProblem(f"the clip's sample rate is {rate} Hz; at least {MIN_RATE} Hz is needed (the model listens "
                          "up to 12 kHz): record or export it at 24 or 48 kHz")
    if rate > MAX_RATE:
        raise ClipProblem(f"the clip's sample rate is {rate} Hz; at most {MAX_RATE} Hz: export it at 48 kHz")
    if not 1 <= channels <= MAX_CHANNELS:
        raise ClipProblem(f"the clip has {channels} channels; at most {MAX_CHANNELS}: export it as mono or stereo")
    budget = int(MAX_DECODED_SECONDS * rate)
    if frames > budget:
        raise ClipProblem(too_long(frames / rate))
    return rate, budget


def too_long(seconds: float) -> str:
    return f"the clip is {seconds:.0f} s long; upload at most {MAX_SECONDS:g} s of one person speaking"


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
