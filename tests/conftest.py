"""Shared fixtures: one real server (tiny model) for the whole session, on its own event loop in a thread (helpers.py
holds the helpers; nothing imports this file).

The tests sit in one folder per layer of the package (tests/engine, tests/frontend, ..., tests/server for the whole
service, tests/tools for the tools' reports). The helper modules stay here at tests/: pytest puts this conftest's
folder on sys.path, so every folder imports them by name. The folders have no __init__.py on purpose: a package
tests/wyoming would be named `wyoming` and shadow the protocol library (so test file names stay unique instead)."""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import pytest

from helpers import ServiceThread, free_port


def pytest_configure(config):
    """Under `pytest -n N` (pytest-xdist) each worker process takes its own share of the processors it may run on:
    on two cores, a core each. The OpenVINO CPU plugin sizes its thread pool from the processors it may use, and with
    the tiny test models its idle pool threads spin between the many sub-millisecond infers: left unpinned, each
    worker's spinning threads take the core the other worker is computing on. What a worker starts (servers in
    subprocesses) inherits its share."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not worker or not count or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    share = cpus[int(worker.removeprefix("gw")) % int(count)::int(count)]
    if share and len(share) < len(cpus):
        os.sched_setaffinity(0, share)


@pytest.fixture(scope="session")
def chorus() -> ServiceThread:
    # Imported here: tests/ha's venv (Home Assistant, without the served package) reads this file too.
    from wyoming_chorus.config import EngineSettings, MetricsSettings, ServerSettings, Settings, ZeroconfSettings

    settings = Settings(
        server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=5.0),
        zeroconf=ZeroconfSettings(enabled=False),
        # Fixed seed: the same text, the same audio. Replies as long as the text makes them (25 frames + 8 per text
        # token), not the 4 s a random model gets by default: the tests need replies that are still running.
        engine=EngineSettings(model="builtin:tiny", seed=1234, random_model_frames=1500),
        metrics=MetricsSettings(address="127.0.0.1", port=0),
    )
    running = ServiceThread(settings)
    running.start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def _shared_engines():
    from shared_engines import SharedEngines  # imports the package: see chorus above

    shared = SharedEngines()
    yield shared
    shared.stop()


@pytest.fixture
def shared_engine(_shared_engines):
    """`shared_engine(settings, model=None, voices=None)`: the session's started engine for those settings, the same
    one for every test that asks with them. After the test, each engine it took must be idle with every KV block
    free, or the test fails here."""
    taken = []

    def take(*args, **kwargs):
        taken.append(engine := _shared_engines.engine(*args, **kwargs))
        return engine

    yield take
    for engine in taken:
        _shared_engines.check_idle(engine)


@pytest.fixture
def shared_runner(_shared_engines):
    """`shared_runner(model, **options)`: the session's compiled native runner of a native_steps.Model with those
    Model.runner options (a runner holds no request between steps: every step names its blocks)."""
    return _shared_engines.runner


@pytest.fixture
def blackholed_netns():
    """A network namespace whose one interface has the address 10.254.0.1 and whose default route leads to a second
    namespace that drops every packet not for itself (it does not forward): outbound traffic vanishes without an
    answer, as on a network that silently drops it, and nothing can reach the real network. Yields the command
    prefix that runs a program inside."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make a network namespace")
    tag = uuid.uuid4().hex[:6]
    inside, sink = f"chorus-in-{tag}", f"chorus-sink-{tag}"
    setup = [
        ["ip", "netns", "add", inside], ["ip", "netns", "add", sink],
        ["ip", "link", "add", f"cin{tag}", "type", "veth", "peer", "name", f"csk{tag}"],
        ["ip", "link", "set", f"cin{tag}", "netns", inside], ["ip", "link", "set", f"csk{tag}", "netns", sink],
        ["ip", "-n", sink, "link", "set", "lo", "up"], ["ip", "-n", sink, "link", "set", f"csk{tag}", "up"],
        ["ip", "-n", sink, "addr", "add", "10.254.0.2/24", "dev", f"csk{tag}"],
        ["ip", "-n", inside, "link", "set", "lo", "up"], ["ip", "-n", inside, "link", "set", f"cin{tag}", "up"],
        ["ip", "-n", inside, "addr", "add", "10.254.0.1/24", "dev", f"cin{tag}"],
        ["ip", "-n", inside, "route", "add", "default", "via", "10.254.0.2"],
    ]
    try:
        for command in setup:
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot make a network namespace here: {' '.join(command)}: {done.stderr.strip()}")
        yield ["ip", "netns", "exec", inside]
    finally:
        for name in (inside, sink):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
