"""The composition root: what one server process is made of, started in order and stopped in reverse.

Start: bind every listener (Wyoming, metrics, the voice studio when it is on: a port that is taken is reported at
once, not after the model has loaded), resolve the model (a hub model is downloaded and exported on first use: the one
place serving reaches the exporter), load and warm up the speech service, then serve /metrics and /health, the voice
studio, the Wyoming server and the zeroconf advertisement.
SIGINT/SIGTERM stop it gracefully: withdraw the advertisement, refuse new connections, let running replies finish
within server.shutdown_timeout, then exit 0.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from wyoming_chorus.config import EngineSettings, Settings
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.export.hub import data_root
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.metrics_http import MetricsServer
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.wyoming.connections import ChorusServer
from wyoming_chorus.wyoming.discovery import Advertisement, advertised_address, default_name
from wyoming_chorus.wyoming.listeners import bind_listener

if TYPE_CHECKING:
    from wyoming_chorus.studio.server import StudioServer

_LOG = logging.getLogger("wyoming-chorus")
# How often the server checks that the engine is alive; a dead engine would otherwise answer every room with errors.
_WATCHDOG_SECONDS = 0.5


def model_dir(settings: EngineSettings) -> ModelDir:
    """The model `engine.model` names, made ready: built, or downloaded and exported, on first use (may take minutes);
    raises SetupError."""
    return ModelDir(resolve_model(settings.model, settings.data_dir))


def studio_voices_file(settings: Settings) -> Path:
    """studio.voices_file (relative to the config file's folder, as clip paths are), else DATA_DIR/studio/
    voices.yaml."""
    if settings.studio.voices_file is None:
        return Path(settings.engine.data_dir or data_root()).expanduser() / "studio" / "voices.yaml"
    path = Path(settings.studio.voices_file).expanduser()
    config = settings.voices.source
    return path if path.is_absolute() or config is None else config.parent / path


class Service:
    """The whole server: engine, Wyoming server, metrics and zeroconf, started and stopped in order."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.metrics = Metrics()
        self.engine: Any = None  # the Speech service, once loaded
        self.server: ChorusServer | None = None
        self.metrics_server: MetricsServer | None = None
        self.studio_server: StudioServer | None = None
        self.advertisement: Advertisement | None = None

    async def start(self) -> None:
        from wyoming_chorus.speech.speech import Speech  # imported late: --help and config errors need no OpenVINO

        s = self.settings
        # Every listener first: a port that is taken is reported at once, not after the model has loaded.
        wyoming_socket = bind_listener(s.server.uri, "server.uri", "--uri")
        metrics_socket = studio_socket = None
        voices = s.voices
        try:
            if s.metrics.enabled:
                metrics_socket = bind_listener(_tcp(s.metrics.address, s.metrics.port), "metrics.port",
                                               "--metrics-port")
            if s.studio.enabled:
                studio_socket = bind_listener(_tcp(s.studio.address, s.studio.port), "studio.port", "studio.port")
                voices = dataclasses.replace(voices, studio_file=studio_voices_file(s))
            # Resolving, loading and compiling the model take seconds (a first download minutes); off the loop so
            # signals are still handled meanwhile.
            model = await asyncio.to_thread(model_dir, s.engine)
            self.engine = await asyncio.to_thread(Speech, model, s.engine, self.metrics, voices, s.scheduler)
            await asyncio.to_thread(self.engine.start)  # the warm-up compiles: signals are handled meanwhile
            for line in self.engine.summary():
                _LOG.info("%s", line)
        except BaseException:
            for listener in (wyoming_socket, metrics_socket, studio_socket):
                if listener is not None:
                    listener.close()
            raise
        if metrics_socket is not None:
            # Its own thread: the serving loop does no metrics work, and a stuck serving loop does not mute the probe.
            self.metrics_server = MetricsServer(self.metrics, lambda: self.engine.stats().alive, metrics_socket)
            self.metrics_server.start()
        if studio_socket is not None:
            from wyoming_chorus.studio.server import StudioServer  # imported late: only a studio needs soundfile
            from wyoming_chorus.studio.voice_file import StudioVoiceFile

            assert voices.studio_file is not None
            self.studio_server = StudioServer(self.engine, self.engine.requests.voices, self.engine.model,
                                              asyncio.get_running_loop(), studio_socket, s.studio,
                                              StudioVoiceFile(voices.studio_file))
            self.studio_server.start()
        self.server = ChorusServer(
            self.engine, wyoming_socket,
            max_text_length=s.engine.max_text_length, samples_per_chunk=s.engine.samples_per_chunk,
            metrics=self.metrics, limits=s.server,
        )
        await self.server.start()
        _LOG.info("serving Wyoming TTS at %s", s.server.uri)
        uri = urlparse(s.server.uri)
        if s.zeroconf.enabled and uri.scheme == "tcp" and uri.hostname and uri.port:  # the config checked both
            self.advertisement = Advertisement(
                s.zeroconf.name or default_name(),
                advertised_address(uri.hostname, s.zeroconf.address),
                uri.port,
                s.zeroconf.interfaces,
            )
            await self.advertisement.start()
        elif s.zeroconf.enabled:
            _LOG.info("zeroconf needs a tcp:// URI; not advertising %s", s.server.uri)

    async def stop(self) -> None:
        timeout = self.settings.server.shutdown_timeout
        if self.advertisement is not None:
            await self.advertisement.stop()
        if self.server is not None:
            await self.server.stop(timeout)
        if self.studio_server is not None:
            await asyncio.to_thread(self.studio_server.stop)
        if self.metrics_server is not None:
            await asyncio.to_thread(self.metrics_server.stop)
        if self.engine is not None:
            await asyncio.to_thread(self.engine.stop, timeout)


async def serve(settings: Settings) -> int:
    """Until SIGINT/SIGTERM (exit code 0), or until the engine dies (1: a supervisor restarts the server, where
    serving errors for ever would leave a house mute)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    service = Service(settings)
    try:
        await service.start()
        signalled = asyncio.create_task(stop.wait())
        while not signalled.done():
            await asyncio.wait([signalled], timeout=_WATCHDOG_SECONDS)
            if not signalled.done() and not service.engine.alive:
                signalled.cancel()
                _LOG.error("the engine has stopped; exiting so that the server can be restarted")
                return 1
        _LOG.info("stopping")
        return 0
    finally:
        await service.stop()


def _tcp(address: str, port: int) -> str:
    return f"tcp://[{address}]:{port}" if ":" in address else f"tcp://{address}:{port}"
