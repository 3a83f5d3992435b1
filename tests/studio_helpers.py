"""The voice studio tests' helpers: a real server (tiny model as a Base or VoiceDesign model) with the studio on, its
page's API called over real HTTP (a clip upload among them), clips made in memory, the voices a real Wyoming Describe
lists, and the files a refused change must leave as they were."""
from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import openvino as ov
import soundfile

from wyoming_chorus.config import (
    EngineSettings,
    MetricsSettings,
    ServerSettings,
    Settings,
    StudioSettings,
    VoicesSettings,
    ZeroconfSettings,
)
from wyoming_chorus.graphs.speaker_encoder import build_speaker_encoder, speaker_encoder_shapes

from helpers import ServiceThread, describe, free_port
from voice_models import SPEAKER_ENCODER, model_variant

MAX_UPLOAD_MB = 2.0


def base_model(tmp_path: Path) -> Path:
    """The tiny model as a Base model with a (random) speaker encoder: it clones voices from the embedding alone."""
    model = model_variant(tmp_path, "base")
    rng = np.random.default_rng(3)
    weights = {name: rng.standard_normal(shape).astype(np.float32) * 0.2
               for name, shape in speaker_encoder_shapes(SPEAKER_ENCODER).items()}
    ov.save_model(build_speaker_encoder(weights, SPEAKER_ENCODER), str(model / "speaker_encoder.xml"))
    return model


@dataclass
class Studio:
    service: ServiceThread
    voices_file: Path

    @property
    def url(self) -> str:
        assert self.service.service.studio_server is not None
        return f"http://127.0.0.1:{self.service.service.studio_server.port}/"

    @property
    def port(self) -> int:
        return self.service.port

    @property
    def token(self) -> str:
        """The install's token, which the page carries (studio/guard.py)."""
        return (self.voices_file.parent / ".studio-token").read_text().strip()

    def call(self, path: str, data: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict]:
        """`call` to the studio's `path` as its page calls it: with the token."""
        return call(self.url + path, data, {"X-Studio-Token": self.token, **(headers or {})})

    def preview_url(self, query: str) -> str:
        return f"{self.url}api/preview?{query}&token={self.token}"


def start_studio(model: Path, scratch: Path, voices: VoicesSettings | None = None, frames: int = 6,
                 **studio_settings) -> Studio:
    """A server for `model` with the studio on (loopback, a free port, its voices file in `scratch`); replies of the
    random model are cut at `frames` frames (6: 0.5 s) a sentence, with a fixed seed: the same request, the same
    audio. `studio_settings`: more of StudioSettings."""
    voices_file = scratch / "studio" / "voices.yaml"
    settings = Settings(
        server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=5.0),
        zeroconf=ZeroconfSettings(enabled=False),
        engine=EngineSettings(model=str(model), seed=7, random_model_frames=frames),
        metrics=MetricsSettings(enabled=False),
        voices=voices or VoicesSettings(),
        studio=StudioSettings(enabled=True, port=0, voices_file=str(voices_file), max_upload_mb=MAX_UPLOAD_MB,
                              **studio_settings),
    )
    service = ServiceThread(settings)
    service.start()
    return Studio(service, voices_file)


def call(url: str, data: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """GET `url`, or POST `data` to it as JSON; the status and the JSON answer."""
    body = None if data is None else json.dumps(data).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def clip_bytes(seconds: float = 4.0, rate: int = 24000, channels: int = 1, file_format: str = "WAV",
               loudness: float = 0.3) -> bytes:
    """A voice-like clip (a 180 Hz tone with its harmonics and some noise) as a file of `file_format`."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    tone = sum(np.sin(2 * np.pi * 180 * k * t) / k for k in range(1, 6)) * loudness / 2
    samples = np.repeat((tone + loudness * 0.05 * rng.standard_normal(len(t)))[:, None], channels, 1)
    out = io.BytesIO()
    soundfile.write(out, samples.astype(np.float32), rate, format=file_format)
    return out.getvalue()


def stale_studio_file(voices_file: Path, stale: str = "ryan") -> None:
    """A studio voices file as another model left it: one cloned voice ("Kept", its clip beside it), and a default
    (`stale`: a CustomVoice model's speaker) that the Base model has no voice for."""
    clips = voices_file.parent / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    (clips / "kept-0123abcd.wav").write_bytes(clip_bytes())
    voices_file.write_text(f"voices:\n  default: {stale}\n  clone:\n    Kept:\n      wav: clips/kept-0123abcd.wav\n")


def clone(studio: Studio, name: str, clip: bytes, text: str | None = "Hello there, this is my voice.",
          **fields) -> tuple[int, dict]:
    """A clip upload, as the page sends it: the name, the transcript and the clip in base64."""
    return studio.call("api/clone", {"name": name, "text": text, "clip": base64.b64encode(clip).decode(),
                                           **fields})


async def listed(studio: Studio) -> list[str]:
    """The voices a real Wyoming Describe lists, the default first."""
    return [voice.name for voice in (await describe(studio.port)).tts[0].voices]


def state(studio: Studio) -> tuple[bytes | None, list[str]]:
    """The voices file's bytes and the clips beside it: what a refused change must leave as it was."""
    clips = studio.voices_file.parent / "clips"
    return (studio.voices_file.read_bytes() if studio.voices_file.exists() else None,
            sorted(p.name for p in clips.iterdir()) if clips.exists() else [])
