"""The studio's input bounded before it costs anything (wyoming_chorus/studio/clips.py, server.py): clips whose header
asks for too much are refused before they are decoded, the worst clip the limits allow is decoded in little memory,
damaged samples (NaN, infinity) and malformed JSON are a 4xx with one line, never a 500 or a traceback."""
from __future__ import annotations

import asyncio
import io
import json
import logging
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import soundfile

from wyoming_chorus.studio.clips import MAX_CHANNELS, MAX_DECODED_SECONDS, MAX_RATE

from studio_helpers import Studio, base_model, clip_bytes, clone, start_studio, state


@pytest.fixture(scope="module")
def studio(tmp_path_factory) -> Studio:
    scratch = tmp_path_factory.mktemp("input-studio")
    running = start_studio(base_model(scratch), scratch)
    yield running
    running.service.stop()


def wav_header(rate: int, channels: int, frames: int, bits: int = 16, float_samples: bool = False) -> bytes:
    """A WAV header that says what the test wants (the data after it may be shorter: it is refused first)."""
    width = bits // 8
    data = frames * channels * width
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 3 if float_samples else 1, channels, rate, rate * channels * width,
                          channels * width, bits) + b"data" + struct.pack("<I", data))


def float_wav(samples: np.ndarray, rate: int = 24000) -> bytes:
    out = io.BytesIO()
    soundfile.write(out, samples.astype(np.float32), rate, format="WAV", subtype="FLOAT")
    return out.getvalue()


def problems(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


voice = np.frombuffer(clip_bytes(), np.int16, offset=44).astype(np.float32) / 32768  # 4 s of a voice-like tone
with_nan, with_inf, with_minus_inf = voice.copy(), voice.copy(), voice.copy()
with_nan[1000], with_inf[50000], with_minus_inf[-1] = np.nan, np.inf, -np.inf

BAD_AUDIO = {
    # Refused from the header: nothing is decoded.
    "655 kHz, 8 channels": (wav_header(655350, 8, 119 * 655350) + b"\0" * 4096, "655350 Hz"),
    "9 channels": (wav_header(48000, 9, 48000 * 5) + b"\0" * 4096, "9 channels"),
    "three minutes": (clip_bytes(seconds=180, rate=16000, file_format="FLAC", loudness=0.0), "180 s long"),
    # Decoded, and refused at the first damaged sample.
    "NaN": (float_wav(with_nan), "not numbers"),
    "infinity": (float_wav(with_inf), "not numbers"),
    "minus infinity": (float_wav(with_minus_inf), "not numbers"),
}


@pytest.mark.parametrize("case", BAD_AUDIO, ids=list(BAD_AUDIO))
def test_audio_over_the_limits_or_damaged_is_refused_with_one_line(studio, caplog, case):
    clip, message = BAD_AUDIO[case]
    before = state(studio)
    status, answer = clone(studio, "Bad", clip, None, voice_only=True)
    assert status == 422 and message in answer["error"], answer
    assert "\n" not in answer["error"] and state(studio) == before
    assert problems(caplog) == []


def test_the_worst_clip_the_limits_allow_decodes_in_little_memory(tmp_path):
    """8 channels at the highest rate, just under the length budget: a FLAC of a few MB that decoded whole would be
    ~700 MB of float32. Measured in a process of its own: its peak RSS over what it had before decoding."""
    path = tmp_path / "worst.flac"
    seconds, rate = int(MAX_DECODED_SECONDS) - 1, MAX_RATE
    rng = np.random.default_rng(0)
    with soundfile.SoundFile(path, "w", rate, MAX_CHANNELS, format="FLAC") as out:
        for _ in range(seconds):
            out.write((rng.standard_normal((rate, MAX_CHANNELS)) * 1e-3).astype(np.float32))
    script = textwrap.dedent(f"""
        import resource, sys
        from wyoming_chorus.studio.clips import ClipProblem, decode
        import soundfile, soxr, numpy
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        samples = decode(__import__("pathlib").Path({str(path)!r}), 24000)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(len(samples), (after - before) // 1024)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600)
    samples, grown_mb = map(int, done.stdout.split())
    assert abs(samples - seconds * 24000) < 24000
    assert grown_mb < 100, f"decoding grew the process by {grown_mb} MB"


def _raw_json(studio: Studio, path: str, body: bytes) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(studio.url + path, body, {"Content-Type": "application/json",
                                                               "X-Studio-Token": studio.token})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


BAD_JSON = {
    "nested 30,000 deep": b"[" * 30000 + b"]" * 30000,
    "objects nested 900 deep": b'{"a":' * 900 + b"1" + b"}" * 900,
    "a nested field": b'{"name": {"first": "Anna"}}',
    "a list field": b'{"name": ["Anna"]}',
    "a number field": b'{"name": "Anna", "voice_only": NaN}',
    "not an object": b'["name", "Anna"]',
    "not JSON": b"{name: Anna}",
    "not UTF-8": b'{"name": "\xff\xfe"}',
}


@pytest.mark.parametrize("case", BAD_JSON, ids=list(BAD_JSON))
@pytest.mark.parametrize("path", ["api/default", "api/clone"])
def test_malformed_json_is_a_400_with_one_line(studio, caplog, case, path):
    before = state(studio)
    status, answer = _raw_json(studio, path, BAD_JSON[case])
    assert status == 400 and "\n" not in answer["error"], answer
    assert state(studio) == before
    assert problems(caplog) == []


async def test_the_server_still_serves_after_all_that(studio):
    status, answer = await asyncio.to_thread(clone, studio, "Fine", clip_bytes(), None, voice_only=True)
    assert status == 200, answer
