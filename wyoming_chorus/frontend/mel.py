"""The speaker encoder's input: the reference's `mel_spectrogram` (qwen-tts, modeling_qwen3_tts.py) in numpy.

The reference takes librosa.filters.mel (Slaney mel scale, Slaney area norm) and torch.stft. librosa would pull
numba and scikit-learn into the server for one small matrix, so the filter bank is written out here, step for step
as librosa computes it (float64, stored as float32 like librosa's default dtype). The STFT is the reference's:
reflect padding of (n_fft - hop) / 2 on both sides, no centring, a periodic Hann window, magnitude with 1e-9 added
under the square root, then log(max(mel, 1e-5)).
"""
from __future__ import annotations

import numpy as np

# extract_speaker_embedding's settings (the speaker encoder only accepts 24 kHz input).
SAMPLE_RATE = 24000
N_FFT = 1024
HOP = 256
N_MELS = 128
F_MIN = 0.0
F_MAX = 12000.0

# librosa's Slaney mel scale: linear below 1 kHz (200/3 Hz per mel), logarithmic above.
_F_SP = 200.0 / 3
_MIN_LOG_HZ = 1000.0
_MIN_LOG_MEL = _MIN_LOG_HZ / _F_SP
_LOGSTEP = np.log(6.4) / 27.0


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    hz = np.asarray(hz, np.float64)
    mel = hz / _F_SP
    log_part = hz >= _MIN_LOG_HZ
    return np.where(log_part, _MIN_LOG_MEL + np.log(np.maximum(hz, 1e-10) / _MIN_LOG_HZ) / _LOGSTEP, mel)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, np.float64)
    return np.where(mel >= _MIN_LOG_MEL, _MIN_LOG_HZ * np.exp(_LOGSTEP * (mel - _MIN_LOG_MEL)), _F_SP * mel)


def mel_filters(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS, fmin: float = F_MIN,
                fmax: float = F_MAX) -> np.ndarray:
    """librosa.filters.mel(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax): float32 [n_mels, n_fft/2+1]."""
    fft_freqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(fmin), _hz_to_mel(fmax), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = np.subtract.outer(mel_f, fft_freqs)
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]  # Slaney norm: each filter has unit area
    return weights.astype(np.float32)


_FILTERS = mel_filters()
_WINDOW = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # torch.hann_window: periodic


def log_mel(audio: np.ndarray) -> np.ndarray:
    """[frames, 128] float32 log-mel of mono 24 kHz audio in [-1, 1], as extract_speaker_embedding feeds it."""
    audio = np.asarray(audio, np.float64)
    padding = (N_FFT - HOP) // 2
    if len(audio) <= padding:
        raise ValueError(f"the clip is too short: {len(audio)} samples")
    padded = np.pad(audio, padding, mode="reflect")
    if len(padded) < N_FFT:
        raise ValueError(f"the clip is too short: {len(audio)} samples")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    spectrum = np.fft.rfft(frames * _WINDOW, axis=1)
    magnitude = np.sqrt(spectrum.real ** 2 + spectrum.imag ** 2 + 1e-9)
    mel = magnitude @ _FILTERS.astype(np.float64).T
    return np.log(np.maximum(mel, 1e-5)).astype(np.float32)
