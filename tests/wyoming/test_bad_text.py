"""Text that once broke a reply off mid-way (issue 8), over a real socket: each reply is spoken, or answered with an
`error`, and ends as the protocol says; the connection serves the next request."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import unicodedata
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event, async_write_event
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.frontend.clean_text import clean_text

from helpers import HOST, SENTENCE, ServiceThread, audio, free_port, read_until

HUGE = "9" * 307  # one digit more than English num2words can say (OverflowError)


class RawClient:
    """A Wyoming connection that can also send a header line as raw bytes. wyoming's client encodes the text as
    UTF-8, which a lone surrogate cannot be; an escaped one ("\\ud800") is what json.loads turns back into it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer

    async def read_event(self) -> Event | None:
        return await async_read_event(self._reader)

    async def write_event(self, event: Event) -> None:
        await async_write_event(event, self._writer)

    async def write_raw(self, line: bytes) -> None:
        self._writer.write(line)
        await self._writer.drain()


@contextlib.asynccontextmanager
async def raw_client(port: int) -> AsyncIterator[RawClient]:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        yield RawClient(reader, writer)
    finally:
        writer.close()


def ends_as_the_protocol_says(events: list[Event], streaming: bool) -> None:
    """Spoken (audio-start, audio-chunk..., audio-stop) or, where it failed, an `error` naming the problem before its
    audio-stop; then synthesize-stopped for a stream."""
    assert events, "the connection closed without a reply"
    if streaming:
        assert events[-1].type == "synthesize-stopped", [e.type for e in events]
        events = events[:-1]
    errors = [e for e in events if e.type == "error"]
    audio([e for e in events if e.type != "error"])  # one well-formed audio-start..audio-stop
    for error in errors:
        assert Error.from_event(error).text
    assert events[-1].type == "audio-stop"


async def still_serves(client) -> None:
    await client.write_event(Synthesize(SENTENCE).event())
    assert len(audio(await read_until(client, "audio-stop"))) > 0


# Each reads out the number digit by digit: 307 words. Run at once, the five share the engine's batches: a third of
# the time they take one after another.
TOO_LARGE = {
    "dollars": [Synthesize(f"${HUGE}").event()],
    "ordinal": [Synthesize(f"the {HUGE}th").event()],
    "euros": [Synthesize(f"{HUGE} €").event()],
    "second-sentence": [Synthesize(f"{SENTENCE} It costs ${HUGE}.").event()],
    "stream": [SynthesizeStart().event(),
               *(SynthesizeChunk(chunk).event() for chunk in (f"{SENTENCE} It costs ", f"${HUGE}", ".")),
               SynthesizeStop().event()],
}


@pytest.fixture(scope="module")
def short_replies(chorus):
    """The session's server with a random model's default frame cap (4 s a reply): on the session's (25 frames + 8 per
    text token), each 307-digit reply would run to 1500 frames (2 minutes of audio, ~20 s of CPU for the five) while
    what is checked, the text's path through the front end and the protocol's end, is the same."""
    settings = chorus.service.settings
    running = ServiceThread(dataclasses.replace(
        settings, server=dataclasses.replace(settings.server, uri=f"tcp://{HOST}:{free_port()}"),
        engine=dataclasses.replace(settings.engine, random_model_frames=50),
        metrics=dataclasses.replace(settings.metrics, enabled=False)))
    running.start()
    yield running
    running.stop()


async def test_numbers_too_large_to_spell_are_spoken_and_the_connection_goes_on(short_replies):
    async def room(events: list[Event]) -> None:
        streaming = events[0].type == "synthesize-start"
        async with AsyncTcpClient(HOST, short_replies.port) as client:
            for event in events:
                await client.write_event(event)
            ends_as_the_protocol_says(
                await read_until(client, "synthesize-stopped" if streaming else "audio-stop"), streaming)
            await still_serves(client)

    results = await asyncio.gather(*(room(events) for events in TOO_LARGE.values()), return_exceptions=True)
    failed = {case: repr(result) for case, result in zip(TOO_LARGE, results, strict=True) if result is not None}
    assert not failed, failed


async def test_a_lone_surrogate_in_one_shot_text(chorus):
    async with raw_client(chorus.port) as client:
        await client.write_raw(b'{"type": "synthesize", "data": {"text": "A \\ud800."}}\n')
        ends_as_the_protocol_says(await read_until(client, "audio-stop"), streaming=False)
        await still_serves(client)


async def test_a_lone_surrogate_in_a_stream_chunk(chorus):
    async with raw_client(chorus.port) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_raw(b'{"type": "synthesize-chunk", "data": {"text": "A \\udc00. "}}\n')
        await client.write_event(SynthesizeChunk(SENTENCE).event())
        await client.write_event(SynthesizeStop().event())
        ends_as_the_protocol_says(await read_until(client, "synthesize-stopped"), streaming=True)
        await still_serves(client)


async def test_text_of_only_a_lone_surrogate_and_control_characters(chorus):
    async with raw_client(chorus.port) as client:
        await client.write_raw(b'{"type": "synthesize", "data": {"text": "\\ud800\\u0000\\u0007"}}\n')
        ends_as_the_protocol_says(await read_until(client, "audio-stop"), streaming=False)
        await still_serves(client)


# ---- the cleaning, without a socket -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("A \ud800.", "A ."),
        ("\udc00x\ud800", "x"),
        ("\ud83d" + "\ude00", "\U0001f600"),  # a pair that arrived in two stream chunks: joined again
        ("a\x00b\x07c\x1bd\x7fe\x9ff", "abcdef"),
        ("one\ttwo\nthree\r\nfour\x85five\x0bsix", "one two three four five six"),
        ("Cafe\u0301", "Caf\u00e9"),
        ("  \n hi \t ", "hi"),
        ("\ud800\x00\x07", ""),  # nothing left: the engine's "the text is empty"
        *((ordinary, ordinary) for ordinary in ["Grüße, 中文, emoji \U0001f600, 21.5 °C", "no\u00a0break"]),
    ],
    ids=["lone-high", "lone-both", "split-pair", "controls", "whitespace-controls", "nfc", "strip", "nothing-left",
         "ordinary-text", "no-break-space"],
)
def test_clean_text(text, cleaned):
    assert clean_text(text) == cleaned


# Lone surrogates too, which characters() leaves out (and st.text drops from characters(categories=["Cs"]) in a union).
_ANY_TEXT = st.text(st.characters() | st.integers(0xD800, 0xDFFF).map(chr))


@given(_ANY_TEXT)
def test_cleaned_text_is_encodable_without_controls_and_stable(text):
    cleaned = clean_text(text)
    cleaned.encode("utf-8")
    assert not any(unicodedata.category(c) == "Cc" for c in cleaned)
    assert unicodedata.is_normalized("NFC", cleaned)
    assert clean_text(cleaned) == cleaned


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(resolve_model("builtin:tiny") / "tokenizer.json"))  # the prompt builder's


def test_the_tokenizer_rejects_a_lone_surrogate(tokenizer):
    with pytest.raises(TypeError):  # what broke replies off: "TextInputSequence must be str"
        tokenizer.encode("A \ud800.", add_special_tokens=False)


@settings(deadline=None)
@given(_ANY_TEXT)
def test_the_tokenizer_takes_any_cleaned_text(tokenizer, text):
    tokenizer.encode(clean_text(text), add_special_tokens=False)
