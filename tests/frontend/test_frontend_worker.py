"""The front-end thread (frontend/worker.py) over a fake engine inbox, as the scheduler is tested over FakeRunner: the
real RequestBuilder (the tiny model's tokenizer, voices and prompt graph) and real Handles on this loop, and an engine
that only records what it is sent. Each request's engine messages keep its order (an abort never overtakes its Add,
text fed always follows it), an open text waits for its language, and what comes after a stop is refused."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import numpy as np
import pytest

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.engine.sequence import Sequence
from wyoming_chorus.errors import RequestFailed, UnknownVoice
from wyoming_chorus.frontend.requests import RequestBuilder
from wyoming_chorus.frontend.worker import FrontEnd, Stop
from wyoming_chorus.speech.api import Handle, Request

SETTINGS = EngineSettings()
TIMEOUT = 30


class FakeEngine:
    """The engine's inbox as the front end sees it (worker.EngineInbox): every message recorded in the order it came,
    as (kind, request id, detail)."""

    def __init__(self, accepting: bool = True):
        self.accepting = accepting
        self.sent: list[tuple[str, int, object]] = []
        self.handles: dict[int, Handle] = {}
        self._changed = threading.Condition()

    def add(self, seq: Sequence, sink: Handle) -> bool:
        self.handles[seq.id] = sink
        self._record("add", seq.id, seq.deferred)
        return self.accepting

    def feed(self, seq_id: int, rows: np.ndarray, frame_cap: int, close: bool) -> None:
        self._record("feed", seq_id, close)

    def promote(self, seq_id: int) -> None:
        self._record("promote", seq_id, None)

    def abort(self, seq_id: int) -> None:
        self._record("abort", seq_id, None)

    def wait_until(self, done: Callable[[list[tuple[str, int, object]]], bool]) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: done(self.sent), TIMEOUT)

    def _record(self, kind: str, seq_id: int, detail: object) -> None:
        with self._changed:
            self.sent.append((kind, seq_id, detail))
            self._changed.notify_all()


@pytest.fixture(scope="module")
def builder() -> RequestBuilder:
    return RequestBuilder(model_dir(SETTINGS), SETTINGS)


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
async def front_end(builder, engine):
    front = FrontEnd(builder, engine)
    front.start()
    yield front
    if front.alive:
        await asyncio.to_thread(front.stop, TIMEOUT)


def open_request(front: FrontEnd, request: Request) -> Handle:
    ticket = front.ticket()
    handle = Handle(request, ticket)
    ticket.open(handle)
    return handle


async def error_of(handle: Handle) -> BaseException:
    """What the reader of a request that ends without audio gets."""
    with pytest.raises(Exception) as caught:
        async with asyncio.timeout(TIMEOUT):
            async for _ in handle:
                raise AssertionError("no audio was expected")
    return caught.value


def messages_of(engine: FakeEngine) -> dict[int, list[str]]:
    by_request: dict[int, list[str]] = {}
    for kind, seq_id, detail in engine.sent:
        by_request.setdefault(seq_id, []).append("close" if kind == "feed" and detail else kind)
    return by_request


async def test_an_abort_never_overtakes_its_add(front_end, engine):
    """Each request is cancelled on the loop at once, before the front end has built it: the engine still gets its
    Add first, then its Abort."""
    handles = [open_request(front_end, Request(f"Room {i}, the lights are off.")) for i in range(6)]
    for handle in handles:
        handle.cancel()
    await asyncio.to_thread(front_end.stop, TIMEOUT)
    assert list(messages_of(engine).values()) == [["add", "abort"]] * len(handles)


async def test_an_open_text_cancelled_before_it_starts_never_reaches_the_engine(front_end, engine):
    handle = open_request(front_end, Request(None))
    handle.feed("Hallo")  # one word: its language is not clear yet, so it waits here
    handle.cancel()
    error = await error_of(handle)
    assert isinstance(error, RequestFailed) and "aborted" in str(error)
    await asyncio.to_thread(front_end.stop, TIMEOUT)
    assert engine.sent == []


async def test_an_open_text_starts_once_its_language_is_clear_and_its_text_follows_its_add(front_end, engine):
    handle = open_request(front_end, Request(None))
    handle.feed("Hallo")  # the tiny model's voice names no language, and one word does not tell it
    marker = open_request(front_end, Request("A whole text, read after the piece above."))
    engine.wait_until(lambda sent: len(sent) == 1)  # the marker's Add: the piece before it has been taken
    ((kind, marker_id, _),) = engine.sent
    assert kind == "add" and engine.handles[marker_id] is marker  # the open text has not started
    handle.feed(" zusammen, das Licht in der Küche ist jetzt aus und die Tür ist zu.")  # now it is clear
    handle.feed(" Gute Nacht.")
    handle.close()
    await asyncio.to_thread(front_end.stop, TIMEOUT)
    by_request = messages_of(engine)
    assert by_request.pop(marker_id) == ["add"]
    ((opened_id, opened),) = by_request.items()
    assert engine.handles[opened_id] is handle and opened == ["add", "feed", "close"]
    assert (await asyncio.wait_for(handle.info, TIMEOUT)).language_detected


async def test_a_deferred_request_is_promoted_once_needed(front_end, engine):
    handle = open_request(front_end, Request("The next sentence, made ahead of need.", deferred=True))
    engine.wait_until(lambda sent: len(sent) == 1)
    handle.needed()
    engine.wait_until(lambda sent: len(sent) == 2)
    ((add, seq_id, deferred), (promote, promoted, _)) = engine.sent
    assert (add, deferred, promote, promoted) == ("add", True, "promote", seq_id)


async def test_text_that_cannot_be_spoken_fails_its_request_only(front_end, engine):
    bad = open_request(front_end, Request("Hello.", voice="nobody-by-this-name"))
    good = open_request(front_end, Request("Hello."))
    assert isinstance(await error_of(bad), UnknownVoice)
    engine.wait_until(lambda sent: len(sent) == 1)
    assert engine.sent[0][0] == "add"
    assert (await asyncio.wait_for(good.info, TIMEOUT)).voice


async def test_an_add_the_engine_refuses_fails_the_request(builder):
    front = FrontEnd(builder, FakeEngine(accepting=False))
    front.start()
    try:
        error = await error_of(open_request(front, Request("Hello.")))
        assert isinstance(error, RequestFailed) and "not running" in str(error)
    finally:
        await asyncio.to_thread(front.stop, TIMEOUT)


async def test_what_comes_after_a_stop_is_refused_and_nothing_reaches_the_engine(front_end, engine):
    """Whether a request posted behind the stop is still in the inbox when the thread closes it (the thread refuses
    it) or comes after (its poster does), its reader hears the same."""
    front_end.post(Stop())
    behind = open_request(front_end, Request("Posted behind the stop."))
    await asyncio.to_thread(front_end.stop, TIMEOUT)
    after = open_request(front_end, Request("Posted once stopped."))
    for handle in (behind, after):
        error = await error_of(handle)
        assert isinstance(error, RequestFailed) and "not running" in str(error)
    assert engine.sent == [] and not front_end.alive
