"""Faults inside the engine, injected into a real engine on the tiny model: every reply still ends, nothing hangs,
and the engine decides in one place whether it is alive.

- a step that raises fails the requests in it, with an error, and the engine goes on;
- a codec decoder that raises ends its request through the abort path: no frame more is generated for it;
- the engine loop dying (a runner step breaking its contract) fails every request it holds or that arrives
  meanwhile, and makes the server exit non-zero;
- stopping with requests in flight ends each of them with an error;
- a warm-up that fails at start (a graph the CPU cannot run) is the error the server stops with, its threads never
  started, nothing masking it.
"""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.errors import RequestFailed
from wyoming_chorus.speech.api import Handle, Request
from wyoming_chorus.speech.speech import Speech

TINY = model_dir(EngineSettings())  # the built-in tiny model, resolved once
LONG = "This reply goes on for a while, long enough to be running when something breaks inside the engine."
TIMEOUT = 30


def new_engine() -> Speech:
    engine = Speech(TINY, EngineSettings(seed=3, random_model_frames=1500))
    engine.start()
    return engine


async def drain(engine: Speech, text: str = LONG) -> int:
    """Reads a request to its end; the number of PCM bytes."""
    total = 0
    async for chunk in engine.generate(Request(text)):
        total += len(chunk)
    return total


async def until(condition, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def step_that_breaks_the_loop(*args, **kwargs):
    """A runner step that returns no StepOutput: the engine loop's own update then raises, as a bug in it would."""
    return None


async def test_a_step_that_raises_fails_its_requests_and_the_engine_goes_on():
    engine = new_engine()
    try:
        real_step, calls = engine.core.runner.step, []

        def step_that_fails_once(entries, *args, **kwargs):
            calls.append(len(entries))
            if len(calls) == 3:
                raise RuntimeError("injected step fault")
            return real_step(entries, *args, **kwargs)

        engine.core.runner.step = step_that_fails_once
        with pytest.raises(RequestFailed, match="generation failed"):
            await asyncio.wait_for(drain(engine), TIMEOUT)
        assert engine.alive
        assert await asyncio.wait_for(drain(engine, "Hi."), TIMEOUT) > 0  # the next request is served
        await until(lambda: engine.stats().blocks_used == 0)
    finally:
        engine.stop()


async def test_a_codec_fault_aborts_its_request_so_no_more_frames_are_made():
    engine = new_engine()
    try:
        decoder = engine.core.codec._decoder
        real_push, pushes = decoder.push, []

        def push_that_fails(state, frames):
            pushes.append(len(frames))
            if len(pushes) == 2:
                raise RuntimeError("injected decoder fault")
            return real_push(state, frames)

        decoder.push = push_that_fails
        with pytest.raises(RequestFailed, match="audio decoder failed"):
            await asyncio.wait_for(drain(engine), TIMEOUT)
        await until(lambda: engine.stats().running == 0 and engine.stats().blocks_used == 0)
        frames = engine.metrics.frames_total._value.get()
        await asyncio.sleep(0.5)
        assert engine.metrics.frames_total._value.get() == frames, "frames were generated for a failed request"
        assert len(pushes) == 2, "the decoder went on with the failed request's frames"
        decoder.push = real_push
        assert await asyncio.wait_for(drain(engine, "Hi."), TIMEOUT) > 0
    finally:
        engine.stop()


async def test_a_request_arriving_while_the_engine_dies_is_failed_not_left_waiting(monkeypatch):
    engine = new_engine()
    try:
        running = asyncio.create_task(drain(engine))
        await until(lambda: engine.stats().running == 1)
        # Failing a handle is slow for a moment: the window in which the dying engine still looks alive.
        real_fail, slow = Handle.fail, threading.Event()

        def slow_fail(handle, error):
            if not slow.is_set():
                slow.set()
                time.sleep(0.5)
            real_fail(handle, error)

        monkeypatch.setattr(Handle, "fail", slow_fail)

        engine.core.runner.step = step_that_breaks_the_loop
        await until(slow.is_set)
        late = asyncio.create_task(drain(engine, "Hello?"))  # arrives while the crash is being handled
        for task in (running, late):
            with pytest.raises(RequestFailed):
                await asyncio.wait_for(task, TIMEOUT)
        assert not engine.alive and not engine.stats().alive
        with pytest.raises(RequestFailed, match="not running"):
            await asyncio.wait_for(drain(engine, "Anyone?"), TIMEOUT)
    finally:
        engine.stop()


async def test_stopping_with_requests_in_flight_ends_each_with_an_error():
    engine = new_engine()
    tasks = [asyncio.create_task(drain(engine, f"{LONG} Room {i}.")) for i in range(3)]
    await until(lambda: engine.stats().running == 3)
    await asyncio.to_thread(engine.stop)
    for task in tasks:
        with pytest.raises(RequestFailed):
            await asyncio.wait_for(task, TIMEOUT)
    assert not engine.alive


def test_a_dead_engine_fails_health_and_the_server_exits_non_zero(monkeypatch):
    import urllib.error
    import urllib.request

    import wyoming_chorus.app as app
    from wyoming_chorus.config import MetricsSettings, ServerSettings, Settings, ZeroconfSettings

    from helpers import free_port

    seen: dict[str, int] = {}

    class EngineDiesAfterStart(app.Service):
        async def start(self) -> None:
            await super().start()

            self.engine.core.runner.step = step_that_breaks_the_loop
            self.engine.open(Request("Hi."))  # the step that runs it crashes the engine loop

        async def stop(self) -> None:  # what a probe sees once the server has noticed, before it shuts down
            url = f"http://127.0.0.1:{self.metrics_server.port}/health"
            try:
                await asyncio.to_thread(urllib.request.urlopen, url, timeout=5)
                seen["health"] = 200
            except urllib.error.HTTPError as error:
                seen["health"] = error.code
            await super().stop()

    monkeypatch.setattr(app, "Service", EngineDiesAfterStart)
    settings = Settings(server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=2.0),
                        zeroconf=ZeroconfSettings(enabled=False),
                        engine=EngineSettings(), metrics=MetricsSettings(address="127.0.0.1", port=0))
    code = asyncio.run(asyncio.wait_for(app.serve(settings), 120))
    assert code == 1
    assert seen["health"] == 503


def test_a_start_that_fails_in_the_warm_up_stops_with_that_error(monkeypatch):
    """Seen with the text model's compressed products under ONEDNN_MAX_CPU_ISA=AVX2: stopping the half-started
    service joined threads that were never started, and "cannot join thread before it is started" hid the cause."""
    import wyoming_chorus.app as app
    from wyoming_chorus.config import MetricsSettings, ServerSettings, Settings, ZeroconfSettings
    from wyoming_chorus.frontend.requests import RequestBuilder

    from helpers import free_port

    def warm_up_that_fails(self):
        raise RuntimeError("the text model cannot run here")

    monkeypatch.setattr(RequestBuilder, "warm_up", warm_up_that_fails)
    settings = Settings(server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=2.0),
                        zeroconf=ZeroconfSettings(enabled=False),
                        engine=EngineSettings(), metrics=MetricsSettings(address="127.0.0.1", port=0))
    with pytest.raises(RuntimeError, match="the text model cannot run here"):
        asyncio.run(asyncio.wait_for(app.serve(settings), 120))
