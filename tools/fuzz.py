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
end: no KV blocks are held and /health answers 200. A failing case is shrunk (events dropped while it still fails)
and printed as a reproducer with the command that replays it. Exit 1 if any case failed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import socket
import struct
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from wyoming.event import Event

from service.config import EngineSettings, MetricsSettings, ServerSettings
from service.wyoming.event_reader import MAX_HEADER_BYTES, BadEvent, EventReader

from service_thread import ServiceThread

HOST = "127.0.0.1"
PROBE_TIMEOUT = 1.0  # Describe must be answered this fast after every case
HANG = 10.0  # no event for this long while a reply is owed: the server hangs
CLOSE_TIMEOUT = 5.0  # a connection the server should close must be closed by then
QUICK_CASES = 300
VERSION = "1.10.2"

# ---- cases ---------------------------------------------------------------------------------------------------------

TEXTS = ["Hi.", "Hi there.", "Bye now. See you soon.", "Good morning! It is 21.5 °C.", "Ä ö ü ß, 😀 and 漢字.",
         "line\nbreak", "tab\tand\rreturn", "", "   ", "\u0000", "\ud800 lone surrogate", "9" * 400,
         "x" * 5000, "word " * 120, "Dr. Smith paid $3.50 at 7:30 a.m. on 2024-01-02."]
ODD_DATA = [None, "Hi there.", ["Hi."], 42, -1.5, True, {}]
VOICES = [None, {"name": "ryan"}, {"name": "serena", "speaker": None}, {"name": "no-such-voice"}, {"language": "de"},
          {"name": None, "language": None, "speaker": None}, "ryan", ["ryan"], 7, {"name": 5}, {"speaker": []}]
ENDINGS = ["read"] * 12 + ["close"] * 3 + ["reset"] * 2 + ["cut"] * 2 + ["leave"]
ABSENT = object()


@dataclass
class Case:
    index: int
    kind: str
    frames: list[bytes]  # what is sent, one item per event as it was made (mutated ones included)
    ending: str  # read | close | reset | cut | leave
    cut_at: float  # for "cut": the fraction of the bytes sent; for "leave": how many events are read
    pieces: int  # the bytes are written in this many pieces

    def data(self) -> bytes:
        return b"".join(self.frames)


def encode(event_type: str, data: Any = ABSENT, payload: bytes | None = None, *, inline: bool = False,
           extra: dict | None = None, ascii_only: bool = False) -> bytes:
    """An event as wyoming writes it (data after the header line), or with the data inside the header."""
    header: dict[str, Any] = {"type": event_type, "version": VERSION, **(extra or {})}
    body = b""
    if data is not ABSENT:
        if inline:
            header["data"] = data
        else:
            body = _dumps(data, ascii_only)
            header["data_length"] = len(body)
    if payload:
        header["payload_length"] = len(payload)
    return _dumps(header, ascii_only) + b"\n" + body + (payload or b"")


def _dumps(value: Any, ascii_only: bool) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=ascii_only).encode()
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be sent
        return json.dumps(value).encode()


def synthesize(rng: random.Random, text: str | None = None) -> bytes:
    data: dict[str, Any] = {"text": rng.choice(TEXTS[:7]) if text is None else text}
    if (voice := rng.choice(VOICES[:6])) is not None or rng.random() < 0.3:
        data["voice"] = voice
    return encode("synthesize", data, ascii_only=rng.random() < 0.5)


def stream(rng: random.Random, text: str | None = None, voice: Any = None) -> list[bytes]:
    text = rng.choice(TEXTS[:7]) if text is None else text
    frames = [encode("synthesize-start", {} if voice is None else {"voice": voice})]
    cuts = sorted(rng.sample(range(1, max(len(text), 2)), min(rng.randint(0, 4), max(len(text) - 1, 0))))
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        frames.append(encode("synthesize-chunk", {"text": text[start:end]}))
    if rng.random() < 0.5:  # Home Assistant's copy for servers that cannot stream: ignored inside a stream
        frames.append(encode("synthesize", {"text": text}))
    frames.append(encode("synthesize-stop"))
    return frames


def valid_events(rng: random.Random) -> list[bytes]:
    frames: list[bytes] = []
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        if choice < 0.3:
            frames.append(encode("describe"))
        elif choice < 0.6:
            frames.append(synthesize(rng))
        elif choice < 0.85:
            frames += stream(rng, voice=rng.choice(VOICES[:6]))
        elif choice < 0.93:
            frames.append(encode(rng.choice(["ping", "transcribe", "audio-start", "x" * 300]), {"x": 1}))
        else:
            frames.append(encode("audio-chunk", {"rate": 16000, "width": 2, "channels": 1},
                                 rng.randbytes(rng.randint(1, 4000))))
    return frames


def odd_events(rng: random.Random) -> list[bytes]:
    """Events that are read without fault but make no sense, or ask too much."""
    choice = rng.randrange(12)
    if choice == 0:
        return [encode(rng.choice(["synthesize", "synthesize-start", "synthesize-chunk"]), rng.choice(ODD_DATA),
                       inline=rng.random() < 0.5)]
    if choice == 1:
        return [encode("synthesize", {"text": rng.choice(ODD_DATA)})]
    if choice == 2:
        return [encode("synthesize", {"text": "Hi.", "voice": rng.choice(VOICES)})]
    if choice == 3:
        return [encode(rng.choice(["synthesize-chunk", "synthesize-stop"]), {"text": "stray"})]
    if choice == 4:
        return [encode("synthesize-start"), encode("synthesize-start"), encode("synthesize-chunk", {"text": "Hi."}),
                encode("synthesize-stop")]
    if choice == 5:
        return [synthesize(rng, rng.choice(TEXTS))]
    if choice == 6:
        return stream(rng, rng.choice(TEXTS), voice=rng.choice(VOICES))
    if choice == 7:  # a stream with a chunk of the wrong shape
        frames = stream(rng, "Hi there.")
        frames.insert(rng.randint(1, len(frames) - 1), encode("synthesize-chunk", rng.choice(ODD_DATA),
                                                              inline=rng.random() < 0.5))
        return frames
    if choice == 8:  # more requests than one connection may queue
        return [synthesize(rng, "Hi.") for _ in range(rng.randint(5, 30))]
    if choice == 9:
        return [encode(rng.choice(["synthesize", "describe"]), {"text": "Hi."},
                       inline=True, extra={rng.choice(["junk", "data_len", "Type"]): rng.choice(ODD_DATA)})]
    if choice == 10:  # data in the header and after it
        body = b'{"text": "Hi."}'
        header = {"type": "synthesize", "data": rng.choice(ODD_DATA), "data_length": len(body)}
        return [json.dumps(header).encode() + b"\n" + body]
    return [encode("synthesize", {"text": "Hi."}, rng.randbytes(rng.randint(1, 3000)))]  # a payload nobody wants


HEADER_VALUES = [None, True, False, 0, -1, 1.5, 2**40, 2**63, 10**30, "5", "", [], [1], {}, {"a": 1},
                 float("inf"), float("nan"), 1e30]


def mutated_header(rng: random.Random, limits: ServerSettings) -> list[bytes]:
    frame = rng.choice([encode("describe"), encode("synthesize", {"text": "Hi."}),
                        encode("audio-chunk", {"rate": 1}, b"\x00" * 10)])
    line, rest = frame.split(b"\n", 1)
    header = json.loads(line)
    key = rng.choice(["type", "version", "data", "data_length", "payload_length", "junk"])
    choice = rng.random()
    if choice < 0.15:
        header.pop(key, None)
    elif choice < 0.7:
        header[key] = rng.choice(HEADER_VALUES)
    elif choice < 0.8:
        header[key] = rng.choice([limits.max_event_bytes, limits.max_event_bytes + 1, len(rest), len(rest) + 1,
                                  max(len(rest) - 1, 0)])
    else:  # nested: spliced in as text (json.dumps could not write the deepest)
        header[key] = "NESTED"
        depth = rng.choice([10, 100, 999, 1000, 5000])
        text = json.dumps(header).replace('"NESTED"', "[" * depth + "]" * depth)
        return [text.encode() + b"\n" + rest]
    text = json.dumps(header)
    return [text.encode() + b"\n" + rest] + ([encode("describe")] if rng.random() < 0.5 else [])


def mutated_bytes(rng: random.Random) -> list[bytes]:
    frames = valid_events(rng)
    data = bytearray(b"".join(frames))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        choice = rng.randrange(7)
        if choice == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[at:at] = rng.randbytes(rng.randint(1, 20))
        elif choice == 2:
            del data[at:at + rng.randint(1, 20)]
        elif choice == 3:
            data[at:at] = data[max(at - 40, 0):at]
        elif choice == 4:
            data[at:at] = rng.choice([b"\n", b"\r\n", b"\x00", b"{", b'"', b"\\"])
        elif choice == 5:
            data = data.replace(b"\n", b"\r\n", 1)
        else:
            digits = [i for i, byte in enumerate(data) if 48 <= byte <= 57]
            if digits:
                data[rng.choice(digits)] = rng.randint(48, 57)
    return [bytes(data)]


def garbage(rng: random.Random) -> list[bytes]:
    choice = rng.randrange(7)
    if choice == 0:
        return [rng.randbytes(rng.randint(1, 2000))]
    if choice == 1:
        return [json.dumps(rng.choice([5, None, "describe", ["describe"], {}, 1.5, True])).encode() + b"\n"]
    if choice == 2:
        depth = rng.choice([50, 999, 1000, 3000])
        return [b"[" * depth + b"]" * depth + b"\n"]
    if choice == 3:
        return [b"\n" * rng.randint(1, 5) + encode("describe")]
    if choice == 4:  # a header line over the limit, with or without its end
        return [b'{"type": "describe", "x": "' + b"y" * (MAX_HEADER_BYTES + 10) + rng.choice([b'"}\n', b""])]
    if choice == 5:
        return [encode("describe")[:-1] + rng.randbytes(rng.randint(1, 50)) + b"\n"]
    return [b'{"type": "synthesize", "data_length": 10}\n' + b"\xff" * 10]


KINDS = {"valid": (valid_events, 25), "odd": (odd_events, 25), "header": (mutated_header, 20),
         "bytes": (mutated_bytes, 20), "garbage": (garbage, 10)}


def make_case(seed: int, index: int, limits: ServerSettings) -> Case:
    rng = random.Random(f"{seed}:{index}")
    kind = rng.choices(list(KINDS), weights=[w for _, w in KINDS.values()])[0]
    make = KINDS[kind][0]
    frames = make(rng, limits) if make is mutated_header else make(rng)
    return Case(index, kind, frames, rng.choice(ENDINGS), rng.random(), rng.randint(1, 4))


# ---- what the server should do --------------------------------------------------------------------------------------

@dataclass
class Expected:
    ends: Counter = field(default_factory=Counter)  # reply ends owed: audio-stop, synthesize-stopped, info
    refused: str | None = None  # the error code of an event the server cannot read (it then closes)
    incomplete: bool = False  # the bytes end inside an event: the server waits for the rest
    stream_open: bool = False
    may_close: bool = False  # so many requests that the server may close the connection (queue-full)


async def expect(data: bytes, limits: ServerSettings) -> Expected:
    """The events the server reads from `data`, by its own reader, and the reply ends it owes for them."""
    reader = asyncio.StreamReader(limit=min(MAX_HEADER_BYTES, limits.max_event_bytes))
    reader.feed_data(data)
    reader.feed_eof()
    events = EventReader(reader, limits.max_event_bytes)
    out = Expected()
    replies = 0
    while True:
        try:
            event = await events.read()
        except BadEvent as error:
            out.refused = error.code
            break
        except asyncio.IncompleteReadError:
            out.incomplete = True
            break
        if event is None:
            break
        if event.type == "describe":
            out.ends["info"] += 1
        elif event.type == "synthesize" and not out.stream_open:
            out.ends["audio-stop"] += 1
            replies += 1
        elif event.type == "synthesize-start" and not out.stream_open:
            out.stream_open = True
            replies += 1
        elif event.type == "synthesize-stop":
            if out.stream_open:
                out.ends["audio-stop"] += 1
            out.ends["synthesize-stopped"] += 1
            out.stream_open = False
    out.may_close = replies > 2 * limits.max_queued_replies
    return out


# ---- running a case -------------------------------------------------------------------------------------------------

class Failure(Exception):
    pass


class ReplyChecker:
    """Every reply well-formed: audio-start, audio-chunk..., audio-stop; synthesize-stopped outside audio."""

    def __init__(self):
        self.in_audio = False
        self.seen: Counter = Counter()
        self.last: Event | None = None

    def add(self, event: Event) -> None:
        self.seen[event.type] += 1
        self.last = event
        if event.type == "audio-start":
            if self.in_audio:
                raise Failure("audio-start inside a reply")
            self.in_audio = True
        elif event.type == "audio-chunk" and not self.in_audio:
            raise Failure("audio-chunk outside a reply")
        elif event.type == "audio-stop":
            if not self.in_audio:
                raise Failure("audio-stop without audio-start")
            self.in_audio = False
        elif event.type == "synthesize-stopped" and self.in_audio:
            raise Failure("synthesize-stopped inside a reply's audio")
        elif event.type == "error" and not isinstance(event.data.get("text"), str):
            raise Failure(f"error event without text: {event.data}")


async def run_case(case: Case, port: int, limits: ServerSettings) -> None:
    """Raises Failure when the server does not do what it should with this case."""
    expected = await expect(case.data(), limits)
    ending = case.ending
    if ending == "read" and (expected.incomplete or expected.stream_open):
        ending = "close"  # the server waits for the rest of an event or the stream's text: we end it
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), PROBE_TIMEOUT)
    try:
        data = case.data()
        if ending == "cut":
            data = data[:int(len(data) * case.cut_at)]
        await send(writer, data, case.pieces)
        if ending in ("close", "cut"):
            await close_and_expect_end(reader, writer)
        elif ending == "reset" or (ending == "leave" and case.cut_at < 0.3):
            reset(writer)
        elif ending == "leave":  # a few of the replies' events, then away
            checker = ReplyChecker()
            for _ in range(int(case.cut_at * 10)):
                if not owed(checker, expected) or (await read_event(reader, checker, expected)) is None:
                    break
            reset(writer)
        else:
            await read_replies(reader, expected)
    finally:
        writer.transport.abort()


async def send(writer: asyncio.StreamWriter, data: bytes, pieces: int) -> None:
    step = max(len(data) // pieces, 1)
    try:
        for offset in range(0, len(data), step):
            writer.write(data[offset:offset + step])
            await writer.drain()
            if pieces > 2:
                await asyncio.sleep(0.001)
    except ConnectionError:
        pass  # the server may close as soon as it has read an event it refuses


async def read_event(reader: asyncio.StreamReader, checker: ReplyChecker, expected: Expected) -> Event | None:
    try:
        event = await asyncio.wait_for(EventReader(reader, 1 << 24).read(), HANG)
    except TimeoutError:
        raise Failure(f"no event for {HANG:g} s; owed {dict(expected.ends)}, got {dict(checker.seen)}") from None
    except BadEvent as error:
        raise Failure(f"the server sent an unreadable event: {error}") from None
    except (ConnectionError, asyncio.IncompleteReadError):
        return None  # a close with unread input is a reset: the server closed
    if event is not None:
        checker.add(event)
    return event


def owed(checker: ReplyChecker, expected: Expected) -> bool:
    return any(checker.seen[t] < n for t, n in expected.ends.items())


async def read_replies(reader: asyncio.StreamReader, expected: Expected) -> None:
    """Until every reply owed has ended, or, for an unreadable event, until the close that must follow it."""
    checker = ReplyChecker()
    must_close = expected.refused is not None
    while must_close or owed(checker, expected):
        if (await read_event(reader, checker, expected)) is None:
            if not (must_close or expected.may_close):
                raise Failure(f"the connection closed; owed {dict(expected.ends)}, got {dict(checker.seen)}")
            # The close comes with an error that says why: the unreadable event, or requests it may not queue.
            codes = {expected.refused, "queue-full"} if expected.may_close else {expected.refused}
            last = checker.last
            if last is None or last.type != "error" or last.data.get("code") not in codes:
                raise Failure(f"expected an error {' or '.join(map(str, codes))} before the close, got "
                              f"{None if last is None else (last.type, last.data)}")
            return
    extra = {t: n for t, n in checker.seen.items() if t in expected.ends and n > expected.ends[t]}
    if extra:
        raise Failure(f"more reply ends than requests: {extra}, owed {dict(expected.ends)}")


async def close_and_expect_end(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Our side ends (FIN): the server must close too, at once, whatever it was doing."""
    if writer.can_write_eof():
        try:
            writer.write_eof()
        except OSError:
            return
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT):
            while await reader.read(1 << 16):
                pass
    except TimeoutError:
        raise Failure(f"the server kept the connection open {CLOSE_TIMEOUT:g} s after the client ended it") from None
    except ConnectionError:
        pass


def reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


async def probe(port: int) -> None:
    """The server answers Describe on a new connection within PROBE_TIMEOUT."""
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            reader, writer = await asyncio.open_connection(HOST, port)
            try:
                writer.write(encode("describe"))
                event = await EventReader(reader, 1 << 24).read()
            finally:
                writer.close()
    except (TimeoutError, OSError, BadEvent, asyncio.IncompleteReadError) as error:
        raise Failure(f"Describe not answered within {PROBE_TIMEOUT:g} s ({type(error).__name__})") from None
    if event is None or event.type != "info":
        raise Failure(f"Describe answered with {None if event is None else event.type}")


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
        super().__init__(EngineSettings(model="builtin:tiny", seed=1, random_model_frames=3, kv_cache_mb=16),
                         ServerSettings(shutdown_timeout=5.0), MetricsSettings(address=HOST, port=0),
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
