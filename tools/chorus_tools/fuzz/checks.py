"""What the server should do with a case's bytes, and running a case against it: the expected reply ends come from
reading the bytes with the server's own event reader and following its rules for replies."""
from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from wyoming.event import Event

from chorus_tools.client import reset, send_raw
from chorus_tools.fuzz.cases import Case, encode
from chorus_tools.probes import HOST
from wyoming_chorus.config import ServerSettings
from wyoming_chorus.wyoming.event_reader import MAX_HEADER_BYTES, BadEvent, EventReader

PROBE_TIMEOUT = 1.0  # Describe must be answered this fast after every case
HANG = 10.0  # no event for this long while a reply is owed: the server hangs
CLOSE_TIMEOUT = 5.0  # a connection the server should close must be closed by then


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
        await send_raw(writer, data, case.pieces)
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
