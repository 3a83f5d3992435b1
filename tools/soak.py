#!/usr/bin/env python3
"""Soak test: a real server under mixed load for many minutes, watched for drift.

Starts `python -m service` (the wyoming-chorus command) on loopback ports of its own, then several concurrent
"rooms" talk to it over real sockets with wyoming's AsyncTcpClient until the time is up, each on a new connection
per request, as Home Assistant does: one-shot `synthesize` requests, streamed ones (synthesize-start, text deltas,
Home Assistant's synthesize copy, synthesize-stop), and requests whose client hangs up mid-reply. Meanwhile it
samples the server process's RSS (/proc/PID/statm) and scrapes /metrics (chorus_kv_blocks_used,
chorus_requests_total).

Printed at the end, as markdown: RSS drift after a warm-up (MB, KB per request, MB per hour), KV blocks used over
time and after the load (must be back to 0), whether chorus_requests_total summed over its statuses equals the
requests sent, and the longest stall of a running reply (the largest gap between two audio chunks of one reply).
Exit status 1 when the counts disagree, blocks stay used, a request failed, or the server died.

    python tools/soak.py                 # 20 minutes
    python tools/soak.py --quick         # 5 minutes
    python tools/soak.py --minutes 2 --rooms 4 --json soak.json

Every loop is bounded by the deadline and a per-request timeout; everything stays on 127.0.0.1.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families
from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped

from service.config import default_config_path

HOST = "127.0.0.1"
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
# Replies are composed from these, so that their lengths vary as a house's do (every distinct length is a new input
# shape somewhere in the pipeline: a soak with a handful of fixed texts would never see that).
PLACES = ("kitchen", "living room", "basement", "garage", "bedroom", "office", "garden")
CLAUSES = (
    "the {place} lights are on",
    "it is {n} degrees in the {place}",
    "the window in the {place} is still open",
    "the washing machine has finished its cycle",
    "the timer is done",
    "someone is at the front door",
    "the coffee will be ready in {n} minutes",
    "rain is expected after {hour} o'clock",
)


def compose(rng: random.Random) -> str:
    """One to three sentences of one or two clauses each."""
    sentences = []
    for _ in range(rng.randint(1, 3)):
        clauses = [rng.choice(CLAUSES).format(place=rng.choice(PLACES), n=rng.randint(2, 30), hour=rng.randint(1, 12))
                   for _ in range(rng.randint(1, 2))]
        sentence = ", and ".join(clauses)
        sentences.append(sentence[0].upper() + sentence[1:] + rng.choice(".!"))
    return " ".join(sentences)


KINDS = ("oneshot", "stream", "hangup")
WEIGHTS = (5, 3, 2)
REQUEST_TIMEOUT = 120.0


@dataclass
class Outcome:
    kind: str
    started: float  # seconds since the load began
    ok: bool
    chunks: int
    longest_gap_s: float  # between two audio chunks of this reply
    error: str | None = None


@dataclass
class Sample:
    t: float  # seconds since the load began
    rss_mb: float
    kv_blocks_used: float
    requests_sent: int
    requests_counted: float  # chorus_requests_total summed over statuses


@dataclass
class Load:
    began: float = field(default_factory=time.monotonic)
    sent: int = 0
    outcomes: list[Outcome] = field(default_factory=list)


# ---- the server ---------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def loopback_config(chosen: Path | None, directory: Path) -> Path:
    """The server's configuration (`chosen`, else the embedded one) with its metrics server on loopback: it listens
    on every address by default. Written beside `chosen`, so that relative clip paths still resolve."""
    source = chosen or default_config_path()
    raw = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    raw.setdefault("metrics", {})["address"] = HOST
    fd, path = tempfile.mkstemp(prefix=".chorus-soak-", suffix=".yaml", dir=chosen.parent if chosen else directory)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(raw, out)
    return Path(path)


def start_server(args: argparse.Namespace, port: int, metrics_port: int, config: Path, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "service", "--config", str(config), "--uri", f"tcp://{HOST}:{port}",
               "--no-zeroconf", "--metrics-port", str(metrics_port)]
    if args.model:
        command += ["--model", args.model]
    with open(log, "wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "CI": os.environ.get("CI", "true")})


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * PAGE_BYTES / 2**20


async def http_get(port: int, path: str, timeout: float = 5.0) -> tuple[int, str]:
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(HOST, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read()
        finally:
            writer.close()
    head, _, body = raw.decode("utf-8", "replace").partition("\r\n\r\n")
    return int(head.split()[1]), body


async def scrape(port: int) -> dict[str, float]:
    """chorus_kv_blocks_used and the sum of chorus_requests_total over its statuses."""
    status, body = await http_get(port, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    values = {"kv_blocks_used": 0.0, "requests_counted": 0.0}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "chorus_kv_blocks_used":
                values["kv_blocks_used"] = sample.value
            elif sample.name == "chorus_requests_total":
                values["requests_counted"] += sample.value
                values[f"status_{sample.labels['status']}"] = sample.value
    return values


async def wait_ready(server: subprocess.Popen, metrics_port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode} while starting")
        with contextlib.suppress(OSError, TimeoutError, IndexError, ValueError):
            if (await http_get(metrics_port, "/health", timeout=2.0))[0] == 200:
                return
        await asyncio.sleep(0.5)
    raise TimeoutError(f"the server was not ready within {timeout:g} s")


def stop_server(server: subprocess.Popen) -> int:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
    return server.returncode


# ---- the rooms ----------------------------------------------------------------------------------------------------

async def request(port: int, kind: str, text: str, rng: random.Random, load: Load) -> Outcome:
    """One reply on its own connection. `hangup` closes the connection after a few audio chunks."""
    started = time.monotonic()
    outcome = Outcome(kind, started - load.began, False, 0, 0.0)
    hang_up_after = rng.randint(1, 6) if kind == "hangup" else None
    streaming = kind == "stream" or (kind == "hangup" and rng.random() < 0.5)
    done_type = SynthesizeStopped().event().type if streaming else AudioStop().event().type
    last_chunk = None
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT), AsyncTcpClient(HOST, port) as client:
            if streaming:
                await client.write_event(SynthesizeStart().event())
                for i in range(0, len(text), 9):  # deltas split mid-word, as a language model streams them
                    await client.write_event(SynthesizeChunk(text[i:i + 9]).event())
                await client.write_event(Synthesize(text).event())  # Home Assistant's copy: ignored in a stream
                await client.write_event(SynthesizeStop().event())
            else:
                await client.write_event(Synthesize(text).event())
            load.sent += 1
            while (event := await client.read_event()) is not None:
                if AudioChunk.is_type(event.type):
                    now = time.monotonic()
                    if last_chunk is not None:
                        outcome.longest_gap_s = max(outcome.longest_gap_s, now - last_chunk)
                    last_chunk = now
                    outcome.chunks += 1
                    if hang_up_after is not None and outcome.chunks >= hang_up_after:
                        outcome.ok = True  # leaving mid-reply is this request's purpose
                        return outcome
                elif Error.is_type(event.type):
                    outcome.error = Error.from_event(event).code or "error"
                elif event.type == done_type:
                    outcome.ok = outcome.error is None and outcome.chunks > 0
                    return outcome
            outcome.error = outcome.error or "the server closed the connection"
    except (OSError, TimeoutError) as failure:
        outcome.error = f"{type(failure).__name__}: {failure}"
    finally:
        load.outcomes.append(outcome)
    return outcome


async def room(port: int, seed: int, deadline: float, load: Load) -> None:
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        kind = rng.choices(KINDS, WEIGHTS)[0]
        await request(port, kind, compose(rng), rng, load)
        await asyncio.sleep(rng.uniform(0.0, 0.3))  # a room pauses between requests now and then


async def watch(pid: int, metrics_port: int, deadline: float, every: float, load: Load,
                samples: list[Sample]) -> None:
    while True:
        values = await scrape(metrics_port)
        samples.append(Sample(round(time.monotonic() - load.began, 1), round(rss_mb(pid), 2),
                              values["kv_blocks_used"], load.sent, values["requests_counted"]))
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(min(every, max(0.0, deadline - time.monotonic())))


async def settle(metrics_port: int, sent: int, timeout: float = 15.0) -> dict[str, float]:
    """The metrics once every hang-up has been noticed and every block freed (or after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        values = await scrape(metrics_port)
        if (values["requests_counted"] == sent and values["kv_blocks_used"] == 0) or time.monotonic() > deadline:
            return values
        await asyncio.sleep(0.5)


# ---- the report ---------------------------------------------------------------------------------------------------

def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def report(args, samples: list[Sample], load: Load, final: dict[str, float], exit_code: int | None) -> tuple[str, bool]:
    warm = [s for s in samples if s.t >= args.warm_up]
    if len(warm) < 2:
        warm = samples
    first, last = warm[0], warm[-1]
    in_window = last.requests_sent - first.requests_sent
    mb_per_hour = slope([(s.t, s.rss_mb) for s in warm]) * 3600
    kb_per_request = slope([(s.requests_sent, s.rss_mb) for s in warm]) * 1024
    by_kind = {k: sum(o.kind == k for o in load.outcomes) for k in KINDS}
    failed = [o for o in load.outcomes if not o.ok]
    running = [o for o in load.outcomes if o.chunks > 1]
    gaps = sorted(o.longest_gap_s for o in running)
    counted = final["requests_counted"]
    statuses = ", ".join(f"{k[7:]} {v:g}" for k, v in sorted(final.items()) if k.startswith("status_"))
    counts_match = counted == load.sent
    blocks_free = final["kv_blocks_used"] == 0
    passed = counts_match and blocks_free and not failed and exit_code in (None, 0)

    if gaps:
        worst = max(running, key=lambda o: o.longest_gap_s)
        p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
        stall = (f"{gaps[-1] * 1000:.0f} ms ({worst.kind} at {worst.started:.0f} s); p99 {p99 * 1000:.0f} ms, "
                 f"median {statistics.median(gaps) * 1000:.0f} ms")
    else:
        stall = "no reply had two chunks"
    errors = f": {', '.join(sorted({o.error or 'no audio' for o in failed}))}" if failed else ""
    rows = [
        (f"server RSS after the {args.warm_up:g} s warm-up",
         f"{first.rss_mb:.1f} -> {last.rss_mb:.1f} MB: {last.rss_mb - first.rss_mb:+.2f} MB over {in_window} "
         f"requests (slope {kb_per_request:+.2f} KB/request, {mb_per_hour:+.1f} MB/hour)"),
        ("server RSS min / max, whole run",
         f"{min(s.rss_mb for s in samples):.1f} / {max(s.rss_mb for s in samples):.1f} MB"),
        ("KV blocks used: max under load / after it",
         f"{max(s.kv_blocks_used for s in samples):g} / {final['kv_blocks_used']:g} "
         f"{'(all free)' if blocks_free else '(NOT FREED)'}"),
        ("chorus_requests_total summed over statuses",
         f"{counted:g} of {load.sent} sent {'(equal)' if counts_match else '(MISMATCH)'}: {statuses}"),
        ("failed requests (client side)", f"{len(failed)}{errors}"),
        ("longest stall of a running reply", stall),
        ("server", "still running at the end" if exit_code is None else f"exited early with {exit_code}"),
    ]
    kinds = ", ".join(f"{n} {k}" for k, n in by_kind.items())
    lines = [f"## Soak: {args.minutes:g} min, {args.rooms} rooms, {load.sent} requests ({kinds})", "",
             "| check | result |", "|---|---|"]
    lines += [f"| {check} | {result} |" for check, result in rows]
    lines += ["", "| t (s) | RSS (MB) | KV blocks used | requests sent | counted by the server |",
              "|---:|---:|---:|---:|---:|"]
    step = max(1, len(samples) // 12)
    shown = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
    lines += [f"| {s.t:.0f} | {s.rss_mb:.1f} | {s.kv_blocks_used:g} | {s.requests_sent} | {s.requests_counted:g} |"
              for s in shown]
    lines += ["", f"**{'PASS' if passed else 'FAIL'}**"]
    return "\n".join(lines), passed


async def soak(args: argparse.Namespace) -> int:
    port, metrics_port = free_port(), free_port()
    scratch = Path(tempfile.mkdtemp(prefix="chorus-soak-"))
    log = scratch / "server.log"
    config = loopback_config(args.config, scratch)
    server = start_server(args, port, metrics_port, config, log)
    samples: list[Sample] = []
    try:
        await wait_ready(server, metrics_port, args.start_timeout)
        load = Load()
        deadline = load.began + args.minutes * 60
        watcher = asyncio.create_task(watch(server.pid, metrics_port, deadline, args.sample_seconds, load, samples))
        await asyncio.gather(*(room(port, args.seed + n, deadline, load) for n in range(args.rooms)))
        await watcher
        final = await settle(metrics_port, load.sent)
    except (OSError, RuntimeError, TimeoutError) as failure:  # the server did not start, died, or stopped answering
        print(f"soak failed: {type(failure).__name__}: {failure}; server log: {log}", file=sys.stderr)
        return 1
    finally:
        exit_code = server.poll()
        stopped = stop_server(server)
        config.unlink(missing_ok=True)
    text, passed = report(args, samples, load, final, exit_code)
    print(text)
    print(f"\nserver log: {log} (exit {stopped} after SIGTERM)")
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": [asdict(s) for s in samples],
                                               "outcomes": [asdict(o) for o in load.outcomes],
                                               "final": final}, indent=1))
    return 0 if passed else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the load runs (default 20)")
    parser.add_argument("--quick", action="store_true", help="5 minutes")
    parser.add_argument("--rooms", type=int, default=4, help="concurrent clients (default 4)")
    parser.add_argument("--model", help="the server's --model (default: its configuration's)")
    parser.add_argument("--config", type=Path, help="the server's --config")
    parser.add_argument("--sample-seconds", type=float, help="how often RSS and /metrics are sampled "
                        "(default: 5 s up to 5 minutes, else 20 s)")
    parser.add_argument("--warm-up", type=float, help="seconds left out of the drift (default: a fifth of the run, "
                        "at most 120)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the rooms' choices")
    parser.add_argument("--start-timeout", type=float, default=300.0, help="for the model to load and compile")
    parser.add_argument("--json", help="also write every sample and request to this file")
    args = parser.parse_args()
    if args.quick:
        args.minutes = 5.0
    if args.minutes <= 0 or args.rooms < 1:
        parser.error("--minutes must be positive and --rooms at least 1")
    args.sample_seconds = args.sample_seconds or (5.0 if args.minutes <= 5 else 20.0)
    args.warm_up = args.warm_up if args.warm_up is not None else min(120.0, args.minutes * 12)
    return asyncio.run(soak(args))


if __name__ == "__main__":
    sys.exit(main())
