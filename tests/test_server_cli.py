"""`wyoming-chorus synth`: one text to a WAV file (and its codes to .npy), through the real engine."""
from __future__ import annotations

import wave

import numpy as np

from service.cli import main


def test_synth_writes_a_wav_and_the_codes(tmp_path):
    out, codes = tmp_path / "out.wav", tmp_path / "codes.npy"
    assert main(["synth", "Hello there.", "-o", str(out), "--seed", "7", "--save-codes", str(codes)]) == 0
    with wave.open(str(out)) as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (24000, 2, 1)
        assert wav.getnframes() > 0
    frames = np.load(codes)
    assert frames.ndim == 2 and frames.shape[1] == 16 and frames.shape[0] > 0


def test_synth_with_an_unknown_voice_fails_cleanly(tmp_path, capsys):
    assert main(["synth", "Hello there.", "-o", str(tmp_path / "out.wav"), "--voice", "no-such-voice"]) == 1
    assert "no-such-voice" in capsys.readouterr().err
    assert not (tmp_path / "out.wav").exists()
