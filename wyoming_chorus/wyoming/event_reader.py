"""Reading Wyoming events from a client that may send anything: every size is checked before anything is buffered.

wyoming's `async_read_event` trusts the header: it waits for as many bytes as `data_length` announces (2^40 makes it
buffer whatever arrives, for ever) and lets anything but a ValueError escape (a header that is a number, lengths
that are strings, JSON nested a thousand deep). This reader checks the header's types and sizes first, then reads
exactly what it announced, and turns every way an event can be wrong into one `BadEvent`:

    header line     at most `max_header_bytes` (and `max_event_bytes`), UTF-8 JSON, ending in a newline:
                    {"type": str, "version": str (optional), "data": {...} (optional),
                     "data_length": int >= 0 (optional), "payload_length": int >= 0 (optional)}
    data            data_length bytes of UTF-8 JSON, merged over the header's data
    payload         payload_length raw bytes
                    header line + data + payload <= max_event_bytes, or EventTooLarge before any of it is read

The data's content is the handler's business: data that is valid JSON but not an object (null, a list, a string)
is handed on as it is, so the handler can answer it like any other malformed field and still end the reply.
A client that leaves mid-event raises asyncio.IncompleteReadError (or the transport's ConnectionError).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from wyoming.event import Event

# Header lines are ~100 bytes (wyoming sends the data after the line, never in it); 64 KiB, asyncio's own line limit,
# still leaves room for a client that sends a whole synthesize inline.
MAX_HEADER_BYTES = 64 * 1024

_ABSENT = object()


class BadEvent(Exception):
    """An event that cannot be read; the connection cannot go on after it (where the next event starts is unknown).
    `code` is the one sent in the Wyoming `error` event."""

    code = "bad-event"


class EventTooLarge(BadEvent):
    """An event (or its header line) longer than the limit; refused before its body is read."""

    code = "event-too-large"


class EventReader:
    """Events from one client stream.

    `wait()` and `read()` are separate so that a caller can give a client long to begin its next event (an idle
    connection) and little to finish it once begun (a half-sent event): `wait()` returns once the first byte of the
    next event has arrived and may be cancelled (a timeout) without losing anything.

    A header line that never ends is stopped by the StreamReader's own limit (`asyncio.start_server(limit=...)`),
    which should be `max_header_bytes`: that limit is what keeps readuntil from buffering it. A line that ends is
    checked here whatever the stream's limit.
    """

    def __init__(self, reader: asyncio.StreamReader, max_event_bytes: int,
                 max_header_bytes: int = MAX_HEADER_BYTES):
        self._reader = reader
        self.max_event_bytes = max_event_bytes
        self.max_header_bytes = min(max_header_bytes, max_event_bytes)
        self._first = b""  # the next event's first byte, once wait() has seen it

    async def wait(self) -> bool:
        """Until the next event has begun; False when the stream ended first (the client closed the connection)."""
        if not self._first:
            self._first = await self._reader.read(1)
        return bool(self._first)

    @property
    def began(self) -> bool:
        """Whether the next event has begun to arrive (wait() has seen its first byte)."""
        return bool(self._first)

    async def read(self) -> Event | None:
        """The next event, or None when the stream ended between events. Raises BadEvent or EventTooLarge for an
        event that is wrong, asyncio.IncompleteReadError when the stream ends inside one."""
        if not await self.wait():
            return None
        line = self._first + await self._read_line()
        self._first = b""
        header = _header(line)
        data_length = _length(header, "data_length")
        payload_length = _length(header, "payload_length")
        if len(line) + data_length + payload_length > self.max_event_bytes:  # before reading any of it
            raise EventTooLarge(f"the event is longer than {self.max_event_bytes} bytes "
                                f"(data_length {data_length}, payload_length {payload_length})")
        data = header.get("data", _ABSENT)
        if data_length:
            data = _merge(data, _json(await self._reader.readexactly(data_length), "the event's data"))
        payload = await self._reader.readexactly(payload_length) if payload_length else None
        return Event(type=header["type"], data={} if data is _ABSENT else data, payload=payload)

    async def _read_line(self) -> bytes:
        if self._first == b"\n":
            return b""
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            line = None
        except asyncio.IncompleteReadError as cut:
            if len(cut.partial) < self.max_header_bytes:
                raise
            line = None
        if line is None or len(line) + 1 > self.max_header_bytes:
            raise EventTooLarge(f"the header line is longer than {self.max_header_bytes} bytes")
        return line


def _header(line: bytes) -> dict[str, Any]:
    header = _json(line, "the header")
    if not isinstance(header, dict):
        raise BadEvent(f"the header must be a JSON object, got {json_kind(header)}")
    if not isinstance(header.get("type"), str) or not header["type"]:
        raise BadEvent("the header needs a 'type' string")
    if not isinstance(header.get("version"), (str, type(None))):
        raise BadEvent(f"the header's 'version' must be a string, got {json_kind(header['version'])}")
    return header


def _length(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadEvent(f"the header's {key!r} must be a non-negative integer, got {json_kind(value)}")
    return value


def _json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadEvent(f"{what} is not UTF-8") from None
    except ValueError:  # not JSON, or an integer of more digits than int() takes
        raise BadEvent(f"{what} is not JSON") from None
    except RecursionError:
        raise BadEvent(f"{what} is nested too deeply") from None


def _merge(inline: Any, data: Any) -> Any:
    """The data block merged over the header's data, as wyoming does; a block that is not an object replaces it."""
    if isinstance(inline, dict) and isinstance(data, dict):
        return {**inline, **data}
    return data


def json_kind(value: Any) -> str:
    """A value as the client would recognise it in its JSON."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = repr(value)
        return text if len(text) <= 24 else "a number of many digits"
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)
