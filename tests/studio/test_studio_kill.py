"""A server stopped (SIGTERM) or killed (SIGKILL) while the studio is making and deleting voices: SIGTERM exits 0 with
no traceback in the log, and after either the voices file parses, every entry's clip is there, and the next start
leaves no clip that no entry names and no temporary file. The real program in a process of its own."""
from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from pathlib import Path

import aiohttp
import yaml

from chorus_tools.probes import free_port
from chorus_tools.servers import ServerProcess

from studio_helpers import clip_bytes

CLIP = clip_bytes(seconds=3.5)
WORKERS = 3


async def studio_started(port: int, folder: Path) -> str:
    """Once the studio answers (it starts just after /health does), the install's token."""
    async with asyncio.timeout(60), aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(f"http://127.0.0.1:{port}/api/voices") as answer:
                    if answer.status == 200:
                        return (folder / ".studio-token").read_text().strip()
            await asyncio.sleep(0.1)


async def make_and_delete(url: str, token: str, names: itertools.count) -> None:
    """Clones and deletes voices until the server goes away."""
    headers = {"X-Studio-Token": token}
    async with aiohttp.ClientSession() as session:
        while True:
            name = f"Voice {next(names)}"
            form = aiohttp.FormData()
            form.add_field("name", name)
            form.add_field("voice_only", "true")
            form.add_field("clip", CLIP, filename="clip.wav")
            try:
                async with session.post(url + "api/clone", data=form, headers=headers) as answer:
                    await answer.read()
                if next(names) % 2:  # every other voice stays: the file grows as well as shrinks
                    async with session.post(url + "api/delete", json={"name": name}, headers=headers) as answer:
                        await answer.read()
            except aiohttp.ClientError:
                return


def studio_state(voices_file: Path) -> tuple[dict, set[str]]:
    """The voices file's clone entries (it must parse), and the files in the clips folder."""
    section = (yaml.safe_load(voices_file.read_text()) or {}).get("voices", {}) if voices_file.exists() else {}
    clips = voices_file.parent / "clips"
    return section.get("clone") or {}, {p.name for p in clips.iterdir()} if clips.exists() else set()


def problems(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines()
            if any(mark in line for mark in ("Traceback", "Exception in callback", "Task exception", " ERROR "))]


async def test_a_stop_or_a_kill_mid_change_leaves_the_studio_consistent(tmp_path):
    voices_file = tmp_path / "studio" / "voices.yaml"
    port = free_port()
    overrides = {"engine": {"model": "builtin:tiny-base", "random_model_frames": 6},
                 "studio": {"enabled": True, "port": port, "voices_file": str(voices_file)}}
    names = itertools.count()
    for round_, how in enumerate((signal.SIGTERM, signal.SIGKILL)):
        log = tmp_path / f"server-{round_}.log"
        async with ServerProcess(log, overrides=overrides) as server:
            token = await studio_started(port, voices_file.parent)
            workers = [asyncio.create_task(make_and_delete(f"http://127.0.0.1:{port}/", token, names))
                       for _ in range(WORKERS)]
            await asyncio.sleep(2.0 + round_ * 0.37)  # a different moment of a change each round
            assert server.process is not None
            server.process.send_signal(how)
            code = await asyncio.to_thread(server.process.wait, 60)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(30):
                    await asyncio.gather(*workers)
        if how == signal.SIGTERM:
            assert code == 0 and problems(log) == [], log.read_text()[-3000:]
        entries, files = studio_state(voices_file)
        assert all(Path(entry["wav"]).name in files for entry in entries.values()), (entries, files)
    # The next start sweeps what the kills left: every clip is named, no temporary file.
    async with ServerProcess(tmp_path / "server-last.log", overrides=overrides):
        await studio_started(port, voices_file.parent)
        entries, files = studio_state(voices_file)
        assert files == {Path(entry["wav"]).name for entry in entries.values()}
        assert not list(voices_file.parent.glob(".*.tmp"))
