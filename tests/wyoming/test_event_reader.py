"""wyoming/event_reader.py on a StreamReader fed bytes: what a client can send, and what the reader makes of it."""
from __future__ import annotations

import asyncio
import json

import pytest
from wyoming.event import Event, async_write_event

from wyoming_chorus.wyoming.event_reader import BadEvent, EventReader, EventTooLarge

pytestmark = pytest.mark.asyncio

LIMIT = 16384


def stream(*chunks: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=LIMIT)
    for chunk in chunks:
        reader.feed_data(chunk)
    if eof:
        reader.feed_eof()
    return reader


async def read(*chunks: bytes, eof: bool = True) -> Event | None:
    return await EventReader(stream(*chunks, eof=eof), max_event_bytes=LIMIT).read()


def header(**fields) -> bytes:
    return json.dumps(fields).encode() + b"\n"


class Wire:
    """What wyoming's own writer sends, collected: the format real clients use."""

    def __init__(self):
        self.sent = bytearray()

    def write(self, data: bytes) -> None:
        self.sent += data

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    async def drain(self) -> None:
        pass


async def wire(*events: Event) -> bytes:
    out = Wire()
    for event in events:
        await async_write_event(event, out)
    return bytes(out.sent)


# ---- well-formed ---------------------------------------------------------------------------------------------------

async def test_events_as_wyoming_writes_them_come_back_whole():
    sent = [Event("describe"), Event("synthesize", {"text": "Hi ä 😀", "voice": {"name": "ryan"}}),
            Event("audio-chunk", {"rate": 24000, "width": 2, "channels": 1}, payload=b"\x00\x01" * 100)]
    events = EventReader(stream(await wire(*sent)), max_event_bytes=LIMIT)
    for expected in sent:
        got = await events.read()
        assert (got.type, got.data, got.payload) == (expected.type, expected.data, expected.payload)
    assert await events.read() is None  # the end of the stream between events


async def test_data_in_the_header_is_merged_under_the_data_block():
    body = b'{"text": "from the block"}'
    event = await read(header(type="synthesize", data={"text": "inline", "voice": None}, data_length=len(body)), body)
    assert event.data == {"text": "from the block", "voice": None}
    assert (await read(header(type="describe", version="1.0", data={"a": 1}))).data == {"a": 1}


async def test_data_that_is_json_but_not_an_object_is_handed_on_for_the_handler_to_refuse():
    assert (await read(header(type="synthesize", data=None))).data is None
    assert (await read(header(type="synthesize", data="text"))).data == "text"
    assert (await read(header(type="synthesize", data_length=6), b"[1, 2]")).data == [1, 2]
    assert (await read(header(type="synthesize", data_length=0, payload_length=None))).data == {}


async def test_an_event_exactly_at_the_limit_is_read():
    line = header(type="x", payload_length=LIMIT)  # as many digits as the length it will have
    line = header(type="x", payload_length=LIMIT - len(line))
    event = await read(line, b"\x00" * (LIMIT - len(line)))
    assert len(line) + len(event.payload) == LIMIT
    with pytest.raises(EventTooLarge):
        await read(header(type="x", payload_length=LIMIT - len(line) + 1))


# ---- malformed -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "line",
    [
        b"5\n", b"null\n", b'["describe"]\n', b'"describe"\n', b"{}\n", b"\n", b"this is not json\n",
        b'{"type": 5}\n', b'{"type": ""}\n', b'{"type": null}\n', b'{"type": "describe", "version": 1}\n',
        b'{"type": "describe", "payload_length": "5"}\n', b'{"type": "describe", "payload_length": [1]}\n',
        b'{"type": "describe", "payload_length": {}}\n', b'{"type": "describe", "data_length": 1.5}\n',
        b'{"type": "describe", "data_length": true}\n', b'{"type": "describe", "data_length": -1}\n',
        b'{"type": "describe", "data_length": 1e30}\n', b'{"type": "describe", "data_length": Infinity}\n',
        b'{"type": "describe", "data_length": NaN}\n',
        b'{"type": "describe", "data_length": ' + b"9" * 5000 + b"}\n",  # more digits than int() takes
        b"[" * 1000 + b"]" * 1000 + b"\n", b'{"a":' * 1000 + b"1" + b"}" * 1000 + b"\n",
        b'{"type": "synth\xffesize"}\n', b'{"type": "synth\xed\xa0\x80"}\n',  # not UTF-8; an encoded surrogate
    ],
    ids=lambda line: line[:40].decode("utf-8", "replace"),
)
async def test_a_malformed_header_is_a_bad_event(line):
    with pytest.raises(BadEvent) as raised:
        await read(line, b"more after it\n")
    assert type(raised.value) is BadEvent and raised.value.code == "bad-event" and str(raised.value)


@pytest.mark.parametrize("body", [b"not json", b"\xff\xfe", b"[" * 1000 + b"]" * 1000, b'{"text": "a"'])
async def test_data_that_is_not_json_is_a_bad_event(body):
    with pytest.raises(BadEvent):
        await read(header(type="synthesize", data_length=len(body)), body)


async def test_a_body_cut_short_is_an_incomplete_read():
    with pytest.raises(asyncio.IncompleteReadError):
        await read(header(type="synthesize", data_length=50), b'{"te')
    with pytest.raises(asyncio.IncompleteReadError):
        await read(header(type="audio-chunk", payload_length=10), b"12345")
    with pytest.raises(asyncio.IncompleteReadError):
        await read(b'{"type": "descr')  # the header line itself


# ---- too large -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "fields",
    [{"data_length": 2**40}, {"payload_length": 2**40}, {"data_length": LIMIT}, {"data_length": LIMIT // 2,
                                                                              "payload_length": LIMIT // 2}],
    ids=["data 2^40", "payload 2^40", "data at the limit plus the header", "data and payload together"],
)
async def test_an_announced_size_over_the_limit_is_refused_before_any_body_is_read(fields):
    reader = stream(header(type="synthesize", **fields), b"x" * 100, eof=False)  # the body never comes
    with pytest.raises(EventTooLarge) as raised:
        await asyncio.wait_for(EventReader(reader, max_event_bytes=LIMIT).read(), 1.0)
    assert raised.value.code == "event-too-large"
    assert await reader.read(100) == b"x" * 100  # nothing of the body was taken


@pytest.mark.parametrize("stream_limit", [LIMIT, 2**20], ids=["stream limit = ours", "stream limit larger"])
async def test_a_header_line_over_the_limit_is_refused(stream_limit):
    reader = asyncio.StreamReader(limit=stream_limit)
    reader.feed_data(b'{"type": "' + b"x" * (2 * LIMIT) + b'"}\n')
    reader.feed_eof()
    with pytest.raises(EventTooLarge):
        await EventReader(reader, max_event_bytes=LIMIT).read()


async def test_a_header_line_without_end_is_refused_once_the_streams_limit_is_reached():
    reader = asyncio.StreamReader(limit=LIMIT)
    reader.feed_data(b"x" * (LIMIT + 2))  # no newline, and none coming
    with pytest.raises(EventTooLarge):
        await asyncio.wait_for(EventReader(reader, max_event_bytes=LIMIT).read(), 1.0)


async def test_the_header_line_limit_is_at_most_the_event_limit():
    assert EventReader(stream(), max_event_bytes=1000).max_header_bytes == 1000
    assert EventReader(stream(), max_event_bytes=2**30).max_header_bytes == 64 * 1024


# ---- waiting -------------------------------------------------------------------------------------------------------

async def test_waiting_for_an_event_can_time_out_without_losing_a_byte():
    reader = stream(eof=False)
    events = EventReader(reader, max_event_bytes=LIMIT)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(events.wait(), 0.05)
    reader.feed_data(await wire(Event("describe")))
    assert await asyncio.wait_for(events.wait(), 1.0)
    assert await events.wait()  # already begun: at once, and the byte it saw is kept
    assert (await events.read()).type == "describe"
    reader.feed_eof()
    assert not await events.wait()
    assert await events.read() is None
