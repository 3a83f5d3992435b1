"""Wyoming replies while the voice studio takes uploads: the same short requests, one after another, alone and while
36 MB clips are uploaded back to back to the studio (as the page sends them, a form, read whole; and as JSON over the
cap, refused from its Content-Length), on the tiny Base model in a server process of its own, the uploads from a
process of their own. The phases alternate for --rounds rounds (a shared machine's load drifts); prints each kind's
median and 90th percentile reply time and their ratio to the alone phases, and the server process's CPU seconds per
second of each kind (on a machine of few cores the uploading client's own CPU slows the rooms too: this tells the
server's share from the client's).

  PYTHONPATH=. python tools/bench_studio_upload.py [--requests 20] [--rounds 3] [--upload-mb 36]
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from chorus_tools.client import speak  # noqa: E402
from chorus_tools.probes import free_port  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

from chorus_tools.servers import ServerProcess  # noqa: E402

TEXT = "The washing machine has finished."


async def replies(uri: str, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.monotonic()
        reply = await speak(uri, TEXT)
        assert reply.complete, reply.error
        times.append(time.monotonic() - started)
    return times


def upload_forever(url: str, token: str, body: bytes, as_form: bool) -> None:
    """In a process of its own: uploads until terminated."""
    async def loop() -> None:
        async with aiohttp.ClientSession() as session:
            while True:
                if as_form:
                    data = aiohttp.FormData()
                    data.add_field("name", "Big")
                    data.add_field("clip", body, filename="big.wav", content_type="audio/wav")
                    headers = {"X-Studio-Token": token}
                else:
                    data, headers = body, {"X-Studio-Token": token, "Content-Type": "application/json"}
                try:
                    async with session.post(url + "api/clone", data=data, headers=headers) as answer:
                        await answer.read()
                except aiohttp.ClientError:
                    pass  # cut while sending: the server refused before reading it all

    asyncio.run(loop())


def summary(name: str, times: list[float], alone: list[float] | None, cpu: float) -> str:
    median, p90 = statistics.median(times), statistics.quantiles(times, n=10)[-1]
    ratio = "" if alone is None else f"  x{median / statistics.median(alone):.2f} median, " \
                                     f"x{p90 / statistics.quantiles(alone, n=10)[-1]:.2f} p90"
    return f"{name:<22} median {median * 1000:5.0f} ms  p90 {p90 * 1000:5.0f} ms  server CPU {cpu:.2f} s/s{ratio}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--upload-mb", type=float, default=36.0)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-studio-"))
    port = free_port()
    clip = bytes(int(args.upload_mb * 2**20))
    cap_mb = 16.0  # studio.max_upload_mb's default: the form is read whole under --upload-mb + 4, JSON refused
    overrides = {"engine": {"model": "builtin:tiny-base", "random_model_frames": 12},
                 "studio": {"enabled": True, "port": port, "voices_file": str(scratch / "voices.yaml"),
                            "max_upload_mb": max(cap_mb, args.upload_mb + 4)}}
    kinds = {"forms read whole": (clip, True), "JSON refused (413)": (b'{"clip": "' + bytes(int(
        (max(cap_mb, args.upload_mb + 4) * 4 / 3 + 1) * 2**20)) + b'"}', False)}
    with ServerProcess(scratch / "server.log", overrides=overrides) as server:
        url = f"http://127.0.0.1:{port}/"
        while not (scratch / ".studio-token").is_file():  # the studio starts just after /health answers
            await asyncio.sleep(0.1)
        token = (scratch / ".studio-token").read_text().strip()
        await replies(server.uri, 5)  # warm-up
        times: dict[str, list[float]] = {"alone": [], **{kind: [] for kind in kinds}}
        cpu = dict.fromkeys(times, 0.0)
        wall = dict.fromkeys(times, 0.0)

        async def phase(kind: str) -> None:
            started, used = time.monotonic(), cpu_seconds(server.pid)
            times[kind].extend(await replies(server.uri, args.requests))
            cpu[kind] += cpu_seconds(server.pid) - used
            wall[kind] += time.monotonic() - started

        for _ in range(args.rounds):
            await phase("alone")
            for kind, (body, as_form) in kinds.items():
                uploader = multiprocessing.Process(target=upload_forever, args=(url, token, body, as_form))
                uploader.start()
                await asyncio.sleep(1.0)
                await phase(kind)
                uploader.terminate()
                uploader.join()
        for kind, measured in times.items():
            print(summary(kind, measured, None if kind == "alone" else times["alone"], cpu[kind] / wall[kind]))


if __name__ == "__main__":
    asyncio.run(main())
