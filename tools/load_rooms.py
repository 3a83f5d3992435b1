#!/usr/bin/env python3
"""Many rooms speaking at once: N concurrent Wyoming clients against one server, each sending R requests.

For each N in --rooms (e.g. 1,2,4,8,16), one after another: time to first audio (p50, p95, max), the aggregate
real-time factor (wall seconds / seconds of audio produced by all rooms together: below 1 is faster than real
time), the mean per-request RTF, and errors.
Streaming mode sends the text as Home Assistant does (synthesize-start, small deltas split mid-word, the
compatibility synthesize, synthesize-stop). Every loop is bounded by --requests and --timeout.

    python tools/load_rooms.py --uri tcp://127.0.0.1:10200 --rooms 1,2,4,8,16 --requests 2 [--stream] \
        [--json out.json]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from chorus_tools.client import Stream, speak

DEFAULT_TEXT = "Good morning. The kitchen lights are on, and the coffee will be ready in five minutes."


@dataclass
class Result:
    room: int
    request: int
    first_audio_s: float | None
    total_s: float
    audio_s: float
    error: str | None


async def room(args: argparse.Namespace, number: int) -> list[Result]:
    results = []
    for request in range(args.requests):
        started = time.monotonic()
        stream = Stream.even(args.text, args.delta_chars, args.delta_ms / 1000) if args.stream else None
        reply = await speak(args.uri, args.text, stream, timeout=args.timeout)
        ok = reply.error is None
        results.append(Result(number, request, reply.first_audio_s if ok else None, time.monotonic() - started,
                              reply.audio_s if ok else 0.0, reply.error))
    return results


def summarise(results: list[Result], wall_s: float) -> dict:
    ok = [r for r in results if r.error is None]
    firsts = sorted(r.first_audio_s for r in ok if r.first_audio_s is not None)
    audio_s = sum(r.audio_s for r in ok)

    def pct(q: float) -> float | None:
        return round(firsts[min(len(firsts) - 1, int(q * len(firsts)))], 3) if firsts else None

    return {
        "requests": len(results),
        "errors": len(results) - len(ok),
        "wall_s": round(wall_s, 3),
        "audio_s": round(audio_s, 3),
        "aggregate_rtf": round(wall_s / audio_s, 3) if audio_s else None,
        "first_audio_p50_s": pct(0.5),
        "first_audio_p95_s": pct(0.95),
        "first_audio_max_s": round(firsts[-1], 3) if firsts else None,
        "total_mean_s": round(statistics.mean(r.total_s for r in ok), 3) if ok else None,
        "rtf_mean": round(statistics.mean(r.total_s / r.audio_s for r in ok if r.audio_s), 3) if ok else None,
    }


async def run(args: argparse.Namespace, rooms: int) -> dict:
    started = time.monotonic()
    per_room = await asyncio.wait_for(asyncio.gather(*(room(args, n) for n in range(rooms))), args.timeout)
    results = [r for rs in per_room for r in rs]
    summary = {"rooms": rooms, **summarise(results, time.monotonic() - started)}
    return {"summary": summary, "results": [asdict(r) for r in results]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", default="tcp://127.0.0.1:10200", help="the server (keep it on this machine)")
    parser.add_argument("--rooms", default="1,2,4,8,16", help="concurrent clients: one run per comma-separated count")
    parser.add_argument("--requests", type=int, default=1, help="requests per room, one after another")
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--stream", action="store_true", help="send the text as streamed deltas")
    parser.add_argument("--delta-chars", type=int, default=7, help="characters per streamed delta")
    parser.add_argument("--delta-ms", type=float, default=20.0, help="pause between streamed deltas")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    parser.add_argument("--json", help="also write every result to this file")
    args = parser.parse_args()
    reports = [asyncio.run(run(args, int(n))) for n in args.rooms.split(",")]
    print(f"{'rooms':>5} {'ttfa p50':>9} {'ttfa p95':>9} {'agg RTF':>8} {'req RTF':>8} {'errors':>6}")
    for s in (r["summary"] for r in reports):
        print(f"{s['rooms']:>5} {s['first_audio_p50_s']:>9} {s['first_audio_p95_s']:>9} {s['aggregate_rtf']:>8} "
              f"{s['rtf_mean']:>8} {s['errors']:>6}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(reports, out, indent=2)
    return 1 if any(r["summary"]["errors"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
