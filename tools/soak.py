#!/usr/bin/env python3
"""Soak test: a real server under mixed load for many minutes, watched for drift.

Starts the wyoming-chorus command on loopback ports of its own, then several concurrent "rooms" talk to it over real
sockets with wyoming's own client (chorus_tools.client) until the time is up, each on a new connection per request,
as Home Assistant does: one-shot `synthesize` requests, streamed ones (synthesize-start, text deltas, Home
Assistant's synthesize copy, synthesize-stop), requests whose client hangs up mid-reply, and two hostile streams: a
silent one (a few words, then nothing) and a trickling one (a word now and then, never an end), which the server
must end with a `stream-timeout` error and synthesize-stopped while the other rooms go on being served (the soak's
server gets short server.stream_pause_timeout and server.stream_max_seconds, so that they end within the run).
Meanwhile it samples the server process's RSS (/proc/PID/statm), open fds and threads, and scrapes /metrics
(chorus_kv_blocks_used, chorus_requests_total).

Printed at the end, as markdown: RSS drift after a warm-up (MB, KB per request, MB per hour), KV blocks used over
time and after the load (must be back to 0), whether chorus_requests_total summed over its statuses equals the
requests sent, the longest gap between two audio chunks of one reply, how many one-shot replies would have run dry
for a listener playing them from their first chunk, and the longest a fresh request waited for its first audio.
Exit status 1 when the counts disagree, blocks stay used, a request failed, or the server died.

    python tools/soak.py                 # 20 minutes
    python tools/soak.py --quick         # 5 minutes
    python tools/soak.py --minutes 2 --rooms 4 --json soak.json

Every loop is bounded by the deadline and a per-request timeout; everything stays on 127.0.0.1.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from chorus_tools.client import Reply, Stream, speak
from chorus_tools.probes import fds_and_threads, rss_mb, scrape
from chorus_tools.servers import ServerProcess
from chorus_tools.soak.records import HOSTILE, KINDS, WEIGHTS, Load, Outcome, Sample
from chorus_tools.soak.report import report

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


# The soak server's stream limits: short, so that hostile streams end several times in a run; a trickle sends a word
# more often than the pause allows, so only the total life ends it.
STREAM_LIMITS = {"stream_pause_timeout": 4.0, "stream_max_seconds": 15.0}
TRICKLE_EVERY = 0.6 * STREAM_LIMITS["stream_pause_timeout"]
REQUEST_TIMEOUT = 120.0


# ---- the rooms ----------------------------------------------------------------------------------------------------

def hostile_stream(kind: str, text: str) -> Stream:
    """A silent stream: its first words, then nothing; a trickling one: a word every TRICKLE_EVERY s, never an end.
    Neither would send its stop within the request's time: the server must end them."""
    words = text.rstrip(".!").split()
    first = [(0.0, " ".join(words[:4]))]
    if kind == "silent":
        return Stream(first, pause_before_stop=REQUEST_TIMEOUT)
    more = [(TRICKLE_EVERY, f" {words[n % len(words)]}") for n in range(int(REQUEST_TIMEOUT / TRICKLE_EVERY))]
    return Stream(first + more, pause_before_stop=REQUEST_TIMEOUT)


async def request(uri: str, kind: str, text: str, rng: random.Random, load: Load) -> Outcome:
    """One reply on its own connection. `hangup` closes the connection after a few audio chunks; a silent or
    trickling stream succeeds when the server ends it with stream-timeout and synthesize-stopped."""
    hang_up_after = rng.randint(1, 6) if kind == "hangup" else None
    if kind in HOSTILE:
        stream: Stream | None = hostile_stream(kind, text)
    else:
        streaming = kind == "stream" or (kind == "hangup" and rng.random() < 0.5)
        stream = Stream.even(text, 9, 0.0) if streaming else None
    reply = Reply()
    try:
        await speak(uri, text, stream, reply=reply, timeout=REQUEST_TIMEOUT, hang_up_after=hang_up_after)
    finally:
        load.sent += reply.started is not None
        if kind in HOSTILE:
            ok = reply.complete and reply.error == "stream-timeout"
        else:  # leaving mid-reply is a hang-up's purpose
            ok = reply.hung_up or (reply.complete and reply.error is None and bool(reply.chunks))
        outcome = Outcome(kind, (reply.started or time.monotonic()) - load.began, ok, len(reply.chunks),
                          reply.longest_gap_s, None if ok else reply.error or "not ended by stream-timeout",
                          reply.first_audio_s, reply.underruns[1])
        load.outcomes.append(outcome)
    return outcome


async def room(uri: str, seed: int, deadline: float, load: Load) -> None:
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        kind = rng.choices(KINDS, WEIGHTS)[0]
        await request(uri, kind, compose(rng), rng, load)
        await asyncio.sleep(rng.uniform(0.0, 0.3))  # a room pauses between requests now and then


def counts(values: dict[str, float]) -> dict[str, float]:
    """chorus_kv_blocks_used, and chorus_requests_total summed over its statuses and by status."""
    statuses = {key.split("=", 1)[1].rstrip("}"): value for key, value in values.items()
                if key.startswith("chorus_requests_total{")}
    return {"kv_blocks_used": values.get("chorus_kv_blocks_used", 0.0), "requests_counted": sum(statuses.values()),
            **{f"status_{status}": value for status, value in statuses.items()}}


async def watch(pid: int, metrics_port: int, deadline: float, every: float, load: Load,
                samples: list[Sample]) -> None:
    while True:
        values = counts(await scrape(metrics_port))
        fds, threads = fds_and_threads(pid)
        samples.append(Sample(round(time.monotonic() - load.began, 1), round(rss_mb(pid), 2), fds, threads,
                              values["kv_blocks_used"], load.sent, values["requests_counted"]))
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(min(every, max(0.0, deadline - time.monotonic())))


async def settle(metrics_port: int, sent: int, timeout: float = 15.0) -> dict[str, float]:
    """The metrics once every hang-up has been noticed and every block freed (or after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        values = counts(await scrape(metrics_port))
        if (values["requests_counted"] == sent and values["kv_blocks_used"] == 0) or time.monotonic() > deadline:
            return values
        await asyncio.sleep(0.5)


async def soak(args: argparse.Namespace) -> int:
    log = Path(tempfile.mkdtemp(prefix="chorus-soak-")) / "server.log"
    server = ServerProcess(log, config=args.config, overrides={"server": STREAM_LIMITS},
                           args=("--model", args.model) if args.model else (),
                           start_timeout=args.start_timeout)
    samples: list[Sample] = []
    try:
        await asyncio.to_thread(server.start)
        await asyncio.to_thread(server.wait_ready)
        load = Load()
        deadline = load.began + args.minutes * 60
        watcher = asyncio.create_task(watch(server.pid, server.metrics_port, deadline, args.sample_seconds, load,
                                            samples))
        await asyncio.gather(*(room(server.uri, args.seed + n, deadline, load) for n in range(args.rooms)))
        await watcher
        final = await settle(server.metrics_port, load.sent)
    except (OSError, RuntimeError, TimeoutError) as failure:  # the server did not start, died, or stopped answering
        print(f"soak failed: {type(failure).__name__}: {failure}; server log: {log}", file=sys.stderr)
        return 1
    finally:
        exit_code = server.process.poll() if server.process else None
        stopped = await asyncio.to_thread(server.stop)
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
