"""Starting a real wyoming-chorus server for a tool or a test: in a child process (`ServerProcess`: the program as a
user runs it, its log in a file, its memory measurable on its own) or on a thread of this process (`ServiceThread`:
as a separate process would run it, on its own event loop, without a process's start-up cost). Both listen on
loopback ports of their own with zeroconf off, and are always stopped on exit.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chorus_tools.probes import HOST, free_port

if TYPE_CHECKING:
    from wyoming_chorus.config import EngineSettings, MetricsSettings, ServerSettings, Settings


def chorus_program(executable: str | None = None) -> list[str]:
    """`executable`, else the `wyoming-chorus` console script of this environment, else `python -m wyoming_chorus`."""
    if executable:
        return [executable]
    installed = Path(sys.executable).with_name("wyoming-chorus")
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "wyoming_chorus"]


class ServerProcess:
    """`wyoming-chorus` in a child process on free loopback ports (Wyoming and /metrics), zeroconf off, stdout and
    stderr into `log_path`. `config`: its --config; `overrides` ({section: {key: value}}) are applied to that file
    (or to the embedded config.yaml) and written to a temporary file beside it, so relative clip paths still resolve.
    `args`: more command-line flags. Used as a context manager: started and ready (/health answers 200) on entry,
    stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, log_path: Path, *, config: Path | None = None, overrides: dict[str, dict] | None = None,
                 args: tuple[str, ...] = (), executable: str | None = None, start_timeout: float = 300.0):
        self.log_path = log_path
        self.port, self.metrics_port = free_port(), free_port()
        self.uri = f"tcp://{HOST}:{self.port}"
        self.start_timeout = start_timeout
        self._written: Path | None = _write_config(config, overrides, log_path.parent) if overrides else None
        chosen = self._written or config
        self.command = [*chorus_program(executable), *(["--config", str(chosen)] if chosen else []),
                        "--uri", self.uri, "--no-zeroconf", "--metrics-address", HOST,
                        "--metrics-port", str(self.metrics_port), *args]
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                            cwd=tempfile.gettempdir(), env={**os.environ, "CI": "true"})

    def wait_ready(self) -> None:
        """Until /health answers 200; RuntimeError if the server exits, TimeoutError after `start_timeout`."""
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode} while starting "
                                   f"(log: {self.log_path})")
            with contextlib.suppress(OSError, urllib.error.URLError):
                with urllib.request.urlopen(f"http://{HOST}:{self.metrics_port}/health", timeout=2.0) as answer:
                    if answer.status == 200:
                        return
            time.sleep(0.5)
        raise TimeoutError(f"the server was not ready within {self.start_timeout:g} s (log: {self.log_path})")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 30 s; the exit status."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self._written is not None:
            self._written.unlink(missing_ok=True)
        return None if self.process is None else self.process.returncode

    def __enter__(self) -> ServerProcess:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> ServerProcess:
        return await asyncio.to_thread(self.__enter__)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)


def _write_config(chosen: Path | None, overrides: dict[str, dict], scratch: Path) -> Path:
    import yaml

    from wyoming_chorus.config import default_config_path

    raw: dict[str, Any] = yaml.safe_load((chosen or default_config_path()).read_text(encoding="utf-8")) or {}
    for section, values in overrides.items():
        raw.setdefault(section, {}).update(values)
    fd, path = tempfile.mkstemp(prefix=".chorus-tools-", suffix=".yaml", dir=chosen.parent if chosen else scratch)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(raw, out)
    return Path(path)


def loopback_settings(engine: EngineSettings, server: ServerSettings | None = None,
                      metrics: MetricsSettings | None = None) -> Settings:
    """Settings for a server on a free loopback port, zeroconf off; `metrics` None leaves the metrics server off."""
    from wyoming_chorus.config import MetricsSettings, ServerSettings, Settings, ZeroconfSettings

    return Settings(server=dataclasses.replace(server or ServerSettings(), uri=f"tcp://{HOST}:{free_port()}"),
                    zeroconf=ZeroconfSettings(enabled=False), engine=engine,
                    metrics=metrics or MetricsSettings(enabled=False))


class ServiceThread:
    """The real Service on its own event loop in a thread. Clients in other event loops reach it only over TCP, so a
    server that blocks its loop fails them. `exception_handler`: the loop's, for callers that count what asyncio
    would otherwise only log. start()/stop(), or a context manager."""

    def __init__(self, settings: Settings,
                 exception_handler: Callable[[asyncio.AbstractEventLoop, dict], None] | None = None):
        from wyoming_chorus.app import Service  # OpenVINO is imported only when a server is needed

        self.settings = settings
        self.service = Service(settings)
        self._exception_handler = exception_handler
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), name="chorus-service-thread",
                                        daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._exception_handler is not None:
            self._loop.set_exception_handler(self._exception_handler)
        self._stop = asyncio.Event()
        try:
            await self.service.start()
        except BaseException as error:
            self._error = error
            raise
        finally:
            self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.service.stop()

    def start(self, timeout: float = 1800.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the service did not start")
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def __enter__(self) -> ServiceThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self.settings.server.uri.rsplit(":", 1)[1])

    @property
    def metrics_url(self) -> str:
        return f"http://{HOST}:{self.service.metrics_server.port}"
