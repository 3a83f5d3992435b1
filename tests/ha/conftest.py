"""The server the Home Assistant check talks to, and the figures it prints at the end. Imports nothing of Home
Assistant or of the served package: this file is also read where neither is installed (the main suite skips the
check)."""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass(eq=False)
class ChorusUnderTest:
    host: str
    port: int
    log_path: Path
    executable: str | None  # set when the check started the server itself
    figures: list[dict[str, Any]] = field(default_factory=list)  # one per check, printed at the end

    def report(self, check: str, **figures: Any) -> None:
        """Keeps a check's figures for the end of the run (and appends them to CHORUS_REPORT as a JSON line)."""
        self.figures.append({"check": check, **figures})
        if path := os.environ.get("CHORUS_REPORT"):
            with open(path, "a") as out:
                out.write(json.dumps(self.figures[-1], ensure_ascii=False) + "\n")

    @functools.cache  # noqa: B019  (one instance per session)
    def normalisation(self, text: str) -> str | None:
        """What the server's text normaliser makes of `text` with language "de", run apart in the server's venv (its
        log shows only the language); None for a server the check did not start."""
        if self.executable is None:
            return None
        python = Path(self.executable).with_name("python")
        code = ("import sys; from wyoming_chorus.frontend.normalize import normalize; "
                "print(normalize(sys.argv[1], 'de'))")
        try:
            done = subprocess.run([str(python), "-c", code, text], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None


@pytest.fixture(scope="session")
def ffmpeg() -> str | None:
    """For HA's conversions: CHORUS_FFMPEG, else ffmpeg on PATH, else imageio-ffmpeg's binary."""
    if given := os.environ.get("CHORUS_FFMPEG"):
        return given
    if found := shutil.which("ffmpeg"):
        return found
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except Exception:  # noqa: BLE001  (no ffmpeg: the converted variants are skipped)
        return None


_USED: list[ChorusUnderTest] = []


@pytest.fixture(scope="session")
def chorus_server():
    """CHORUS_SERVER=HOST:PORT with CHORUS_LOG=FILE: a running server; else CHORUS_HA_CHORUS=EXECUTABLE: a server of
    its own (builtin tiny model) on free loopback ports, stopped at the end."""
    if server := os.environ.get("CHORUS_SERVER"):
        if not os.environ.get("CHORUS_LOG"):
            pytest.exit("CHORUS_SERVER needs CHORUS_LOG (the language check reads the server's log)", returncode=4)
        host, port = server.rsplit(":", 1)
        _USED.append(ChorusUnderTest(host, int(port), Path(os.environ["CHORUS_LOG"]), None))
        yield _USED[-1]
        return
    # The Home Assistant harness blocks sockets from each test's setup on; this fixture's readiness probe runs
    # inside the first one's setup, before `socket_enabled` lets the test's own connections through.
    import pytest_socket

    from chorus_tools.servers import ServerProcess

    pytest_socket.enable_socket()
    executable = os.environ["CHORUS_HA_CHORUS"]
    log_path = Path(tempfile.mkdtemp(prefix="check-ha-")) / "server.log"
    with ServerProcess(log_path, executable=executable, start_timeout=600) as running:  # the first start builds
        _USED.append(ChorusUnderTest("127.0.0.1", running.port, log_path, executable))  # the tiny model
        yield _USED[-1]


def pytest_terminal_summary(terminalreporter) -> None:
    """Each check's figures, and the server's log lines for the replies."""
    for server in _USED:
        terminalreporter.section("figures (seconds after the first text reached Home Assistant)")
        for figures in server.figures:
            terminalreporter.write_line(f"\n-- {figures['check']}")
            for key, value in figures.items():
                if key != "check":
                    terminalreporter.write_line(f"   {key}: {value}")
        terminalreporter.write_line(f"\nserver log: {server.log_path}")
        if server.log_path.exists():
            for line in server.log_path.read_text(errors="replace").splitlines():
                if "reply to" in line:
                    terminalreporter.write_line(f"   {line}")
