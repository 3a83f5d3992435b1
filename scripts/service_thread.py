"""The real service on its own event loop in a thread, for the scripts (as a separate process would run it, without
a process's start-up cost): loopback only, zeroconf off, a free port."""
from __future__ import annotations

import asyncio
import dataclasses
import socket
import threading
from collections.abc import Callable

from service.config import EngineSettings, MetricsSettings, ServerSettings, Settings, ZeroconfSettings

HOST = "127.0.0.1"


class ServiceThread:
    """`metrics`: None leaves the metrics server off. `exception_handler`: the loop's, for scripts that count what
    asyncio would otherwise only log."""

    def __init__(self, engine: EngineSettings, server: ServerSettings | None = None,
                 metrics: MetricsSettings | None = None,
                 exception_handler: Callable[[asyncio.AbstractEventLoop, dict], None] | None = None):
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            self.port = probe.getsockname()[1]
        self.settings = Settings(
            server=dataclasses.replace(server or ServerSettings(), uri=f"tcp://{HOST}:{self.port}"),
            zeroconf=ZeroconfSettings(enabled=False),
            engine=engine,
            metrics=metrics or MetricsSettings(enabled=False),
        )
        self._exception_handler = exception_handler
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), name="script-service", daemon=True)

    async def _main(self) -> None:
        from service.app import Service  # OpenVINO is imported only when a server is needed

        self._loop = asyncio.get_running_loop()
        if self._exception_handler is not None:
            self._loop.set_exception_handler(self._exception_handler)
        self._stop = asyncio.Event()
        self.service = Service(self.settings)
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

    def __enter__(self) -> ServiceThread:
        self._thread.start()
        self._ready.wait(1800)
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
