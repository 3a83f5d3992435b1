"""The server sends nothing anywhere and nothing outside it can stop it.

Both tests run the real `wyoming-chorus` command in a process of its own, as a household runs it: with a fresh home
directory (no OpenVINO consent file, so OpenVINO's telemetry would run) and without the CI variable that OpenVINO's
telemetry honours, so that the tests would fail if anything phoned home.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import free_port

# Records every name lookup and connection of the server process and of every child it forks (an audit hook is
# inherited across fork) whose address is not on this machine, then runs the real command line.
_AUDITED_SERVER = r"""
import ipaddress, json, os, sys

LOG = os.environ["CHORUS_AUDIT_LOG"]

def _outside(host):
    if host in (None, "", "localhost"):
        return False
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return True  # a name other than localhost: looking it up already leaves the machine
    return not (address.is_loopback or address.is_unspecified)

def _hook(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    else:
        return
    if _outside(host):
        with open(LOG, "a") as log:
            log.write(json.dumps({"pid": os.getpid(), "event": event, "host": str(host)}) + "\n")

sys.addaudithook(_hook)
from wyoming_chorus.cli import main
sys.exit(main(sys.argv[1:]))
"""

_DESCRIBE = r"""
import asyncio, sys
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe

async def main():
    async with AsyncTcpClient("127.0.0.1", int(sys.argv[1])) as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), 5)
        print(event.type if event else "closed")

asyncio.run(main())
"""


def _household_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
    real_cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env.update(HOME=str(home), XDG_CACHE_HOME=real_cache, **extra)  # the built tiny model is reused, not rebuilt
    return env


def _serve_command(port: int) -> list[str]:
    return [sys.executable, "-c", _AUDITED_SERVER, "--uri", f"tcp://127.0.0.1:{port}", "--no-zeroconf",
            "--metrics-port", "0"]


def _describe(port: int, prefix: list[str] = ()) -> str:
    done = subprocess.run([*prefix, sys.executable, "-c", _DESCRIBE, str(port)], capture_output=True, text=True,
                          timeout=30)
    return done.stdout.strip()


def _wait_serving(server: subprocess.Popen, port: int, prefix: list[str] = (), timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server exited with {server.returncode}"
        if _describe(port, prefix) == "info":
            return
        time.sleep(0.5)
    raise TimeoutError("the server did not start serving")


def _stop(server: subprocess.Popen) -> int:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
    try:
        return server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        raise


def test_the_server_keeps_serving_when_outbound_traffic_is_blackholed(tmp_path, blackholed_netns):
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    env = _household_env(home, CHORUS_AUDIT_LOG=str(tmp_path / "audit.jsonl"))
    server = subprocess.Popen([*blackholed_netns, *_serve_command(port)], env=env, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_serving(server, port, blackholed_netns)
        time.sleep(6)  # OpenVINO's telemetry SIGTERMs its blocked sender after 3 s
        assert server.poll() is None, "the server stopped by itself"
        assert _describe(port, blackholed_netns) == "info"
    finally:
        code = _stop(server)
        log = server.stdout.read()
    assert code == 0, log
    assert log.count("stopping") == 1, log  # once: for our SIGTERM, not before
    assert not (home / "intel").exists(), "OpenVINO's telemetry wrote its files"


def test_no_socket_of_the_server_or_its_children_leaves_the_machine(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    audit = tmp_path / "audit.jsonl"
    port = free_port()
    server = subprocess.Popen(_serve_command(port), env=_household_env(home, CHORUS_AUDIT_LOG=str(audit)),
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_serving(server, port)
        synthesize = ("import asyncio, sys\nfrom wyoming.client import AsyncTcpClient\n"
                      "from wyoming.tts import Synthesize\n"
                      "async def main():\n"
                      "    async with AsyncTcpClient('127.0.0.1', int(sys.argv[1])) as c:\n"
                      "        await c.write_event(Synthesize(text='Hi.').event())\n"
                      "        while (e := await asyncio.wait_for(c.read_event(), 60)) and e.type != 'audio-stop':\n"
                      "            pass\n"
                      "        print(e.type if e else 'closed')\n"
                      "asyncio.run(main())\n")
        spoken = subprocess.run([sys.executable, "-c", synthesize, str(port)], capture_output=True, text=True,
                                timeout=120)
        assert spoken.stdout.strip() == "audio-stop", spoken.stderr
        time.sleep(4)  # anything sent in the background has had its chance
    finally:
        code = _stop(server)
        log = server.stdout.read()
    assert code == 0, log
    leaks = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
    assert leaks == [], f"the server reached outside the machine: {leaks}"
    assert not (home / "intel").exists(), "OpenVINO's telemetry wrote its files"


_CHILD_SIGTERM = r"""
import asyncio, os, signal, time
import wyoming_chorus  # noqa: F401  (what the server imports first)

async def main():
    received = []
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: received.append("SIGTERM"))

    def fork_a_child_that_gets_sigterm():  # as OpenVINO's telemetry did: forked from a worker thread, no exec
        pid = os.fork()
        if pid == 0:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
            os._exit(0)
        os.waitpid(pid, 0)

    await asyncio.to_thread(fork_a_child_that_gets_sigterm)
    await asyncio.sleep(0.5)
    print(received)

asyncio.run(main())
"""


def test_a_signal_sent_to_a_forked_child_does_not_reach_the_servers_loop(tmp_path):
    done = subprocess.run([sys.executable, "-c", _CHILD_SIGTERM], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
