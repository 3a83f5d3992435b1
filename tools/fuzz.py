#!/usr/bin/env python3
"""Fuzz the Wyoming server: random and mutated events over real sockets, with checks after every case.

    python tools/fuzz.py [--cases 10000] [--quick] [--seed 1] [--case N]

It starts its own server in this process (tiny model, KV pool of 16 MiB, replies of a few frames so that they are
quick) on loopback, and runs the cases one after another, each on a fresh connection:

- valid events (describe, synthesize, streams, unknown types, audio payloads) and valid but odd ones (data that is
  null, a string, a list or a number; text and voice of the wrong types; chunks and stops without a start; a second
  start; empty, huge and strange text; more requests than the connection may queue);
- headers with a field mutated (types, signs, sizes, nesting, junk keys) and byte-level mutations of whole events
  (flips, garbage, deletions, duplications, truncation), random garbage and lines longer than the limit;
- every case is written in random pieces and ends one of several ways: it reads its replies to the end, or closes
  (or resets) after sending, after a random part of its bytes, or after a few of the replies' events.

The expected outcome comes from reading the case's bytes with the server's own event reader (wyoming/event_reader)
and following the server's rules for replies: which replies it starts, whether it refuses an event and closes.
After each case: the server answers Describe on a new connection within 1 s; nothing was logged at ERROR or with a
traceback and asyncio's exception handler was not called; every reply that started ended with audio-stop (and
synthesize-stopped for streams), or the connection closed; an unreadable event got an `error` and a close. At the
end: no KV blocks are held and /health answers 200; the report says how RSS and live Python objects moved from the
warm-up to the end, per case (chorus_tools/fuzz/memory.py). A failing case is shrunk (events dropped while it still
fails) and printed as a reproducer with the command that replays it. Exit 1 if any case failed.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from chorus_tools.fuzz.cases import Case, make_case
from chorus_tools.fuzz.checks import Failure, probe, run_case
from chorus_tools.fuzz.memory import Reading, growth, read, warm_up_cases
from chorus_tools.probes import HOST
from chorus_tools.servers import ServiceThread, loopback_settings
from wyoming_chorus.config import EngineSettings, MetricsSettings, ServerSettings

QUICK_CASES = 300

# ---- the server under test ------------------------------------------------------------------------------------------

class LogWatch(logging.Handler):
    """Records what must never appear: ERROR and above, tracebacks, asyncio's reports of unhandled exceptions."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.problems: list[str] = []
        self.warnings = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.levelno >= logging.ERROR or record.exc_info or "never retrieved" in message:
            text = f"{record.levelname} {record.name}: {message}"
            if record.exc_info:
                text += f" [{record.exc_info[0].__name__}: {record.exc_info[1]}]"
            self.problems.append(text)
        elif record.levelno >= logging.WARNING:
            self.warnings += 1

    def unhandled(self, _loop: asyncio.AbstractEventLoop, context: dict) -> None:
        self.problems.append(f"asyncio exception handler: {context.get('message')} {context.get('exception')!r}")


class ServerThread(ServiceThread):
    """The tiny model with a small pool and 3-frame replies, metrics on (for /health), asyncio's unhandled errors
    counted by the watch."""

    def __init__(self, watch: LogWatch):
        super().__init__(loopback_settings(
            EngineSettings(model="builtin:tiny", seed=1, random_model_frames=3, kv_cache_mb=16),
            ServerSettings(shutdown_timeout=5.0), MetricsSettings(address=HOST, port=0)),
            exception_handler=watch.unhandled)

    def health(self) -> int:
        url = f"http://{HOST}:{self.service.metrics_server.port}/health"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status


# ---- the run --------------------------------------------------------------------------------------------------------

@dataclass
class Summary:
    cases: int = 0
    failures: list[tuple[Case, str]] = field(default_factory=list)
    kinds: Counter = field(default_factory=Counter)
    endings: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    warnings: int = 0
    final: list[str] = field(default_factory=list)  # problems found at the end: KV blocks held, /health
    memory: list[Reading] = field(default_factory=list)  # after the warm-up and at the end (chorus_tools/fuzz/memory)


async def check(case: Case, server: ServerThread, watch: LogWatch) -> str | None:
    """The case run and every check after it; the first problem found, or None."""
    limits = server.settings.server
    seen = len(watch.problems)
    try:
        await run_case(case, server.port, limits)
        await probe(server.port)
    except Failure as failure:
        return str(failure)
    await asyncio.sleep(0)
    if len(watch.problems) > seen:
        return "; ".join(watch.problems[seen:])
    if not server.service.engine.stats().alive:
        return "the engine died"
    return None


async def shrink(case: Case, reason: str, server: ServerThread, watch: LogWatch, budget: int = 40) -> Case:
    """The case with as many of its events left out as still make it fail."""
    best = case
    i = 0
    while i < len(best.frames) and budget > 0 and len(best.frames) > 1:
        trial = Case(best.index, best.kind, best.frames[:i] + best.frames[i + 1:], best.ending, best.cut_at,
                     best.pieces)
        budget -= 1
        if await check(trial, server, watch) is not None:
            best = trial
        else:
            i += 1
    return best


def reproducer(case: Case, reason: str, seed: int) -> str:
    def show(frame: bytes) -> str:
        return repr(frame) if len(frame) <= 300 else f"{frame[:200]!r} ... ({len(frame)} bytes)"
    reason = reason if len(reason) <= 400 else reason[:400] + " ..."
    lines = [f"case {case.index} ({case.kind}, ending {case.ending}, cut_at {case.cut_at:.3f}, "
             f"{case.pieces} pieces): {reason}"]
    lines += [f"    send {show(frame)}" for frame in case.frames]
    lines.append(f"    replay: python tools/fuzz.py --seed {seed} --case {case.index}")
    return "\n".join(lines)


async def fuzz(server: ServerThread, watch: LogWatch, indices: range | list[int], seed: int,
               progress: bool = False) -> Summary:
    summary = Summary()
    started = time.monotonic()
    limits = server.settings.server
    warm_up = warm_up_cases(len(indices))
    for n, index in enumerate(indices, 1):
        case = make_case(seed, index, limits)
        summary.cases += 1
        summary.kinds[case.kind] += 1
        summary.endings[case.ending] += 1
        if (reason := await check(case, server, watch)) is not None:
            small = await shrink(case, reason, server, watch)
            summary.failures.append((small, reason))
            if progress:
                print(reproducer(small, reason, seed), file=sys.stderr, flush=True)
        if n == warm_up:
            summary.memory.append(read(n))
        if progress and n % 500 == 0:
            print(f"{n} cases, {len(summary.failures)} failures, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
    engine, wyoming = server.service.engine, server.service.server
    deadline = time.monotonic() + 10
    while (engine.stats().blocks_used or wyoming.connections) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if (used := engine.stats().blocks_used) != 0:
        summary.final.append(f"{used} KV blocks still held at the end")
    if wyoming.connections:
        summary.final.append(f"{wyoming.connections} connections still counted at the end")
    if summary.memory:
        summary.memory.append(read(summary.cases))
    status = await asyncio.to_thread(server.health)
    if status != 200:
        summary.final.append(f"/health answered {status}")
    summary.seconds = time.monotonic() - started
    summary.warnings = watch.warnings
    return summary


def report(summary: Summary, seed: int) -> str:
    lines = [f"{summary.cases} cases (seed {seed}) in {summary.seconds:.1f} s "
             f"({summary.cases / max(summary.seconds, 1e-9):.0f} cases/s): {len(summary.failures)} failures",
             "  kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(summary.kinds.items())),
             "  endings: " + ", ".join(f"{k} {n}" for k, n in sorted(summary.endings.items())),
             f"  warnings logged: {summary.warnings}"]
    if len(summary.memory) == 2:
        lines.append("  " + growth(*summary.memory))
    lines += [f"  at the end: {problem}" for problem in summary.final]
    lines += [reproducer(case, reason, seed) for case, reason in summary.failures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CASES} cases, for the tests")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--case", type=int, action="append", help="run only this case (repeatable): a replay")
    args = parser.parse_args(argv)
    indices = args.case or range(QUICK_CASES if args.quick else args.cases)
    watch = LogWatch()
    root = logging.getLogger()
    level = root.level
    root.addHandler(watch)
    root.setLevel(logging.DEBUG)  # tracebacks are looked for at every level
    try:
        with ServerThread(watch) as server:
            summary = asyncio.run(fuzz(server, watch, indices, args.seed, progress=not args.quick))
    finally:
        root.removeHandler(watch)
        root.setLevel(level)
    print(report(summary, args.seed))
    return 1 if summary.failures or summary.final else 0


if __name__ == "__main__":
    sys.exit(main())
