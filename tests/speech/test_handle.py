"""A request's Handle (speech/api.py) on its own, producers on other threads and the reader on the loop; and
identical requests sharing one generation (speech/sharing.py) on handles fed by hand. No engine here."""
from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from wyoming_chorus.errors import InvalidText, QueueFull, RequestFailed
from wyoming_chorus.playback_clock import PlaybackClock
from wyoming_chorus.speech.api import Handle, Request, RequestInfo
from wyoming_chorus.speech.sharing import Sharing


class Recorder:
    """A Control that notes what the handle asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def feed(self, handle, text):
        self.calls.append(("feed", text))

    def close(self, handle):
        self.calls.append(("close",))

    def needed(self, handle):
        self.calls.append(("needed",))

    def cancel(self, handle):
        self.calls.append(("cancel",))


async def read(handle: Handle) -> list[bytes]:
    return [chunk async for chunk in handle]


async def test_chunks_put_from_another_thread_arrive_in_order_then_the_end():
    handle = Handle(Request("Hi."), Recorder())

    def produce():
        handle.started("ryan", "en", True)
        for i in range(500):
            handle.put(i.to_bytes(2, "little"))
        handle.finish()
        handle.put(b"late")  # after the end: dropped

    thread = threading.Thread(target=produce)
    thread.start()
    chunks = await asyncio.wait_for(read(handle), 10)
    thread.join()
    assert chunks == [i.to_bytes(2, "little") for i in range(500)]
    assert await handle.info == RequestInfo("ryan", "en", True)
    assert handle.done
    assert [chunk async for chunk in handle] == []  # read to its end: nothing more


async def test_a_failure_comes_after_the_audio_before_it_and_fails_the_info():
    handle = Handle(Request("Hi."), Recorder())
    thread = threading.Thread(target=lambda: (handle.put(b"ab"), handle.fail(InvalidText("the text is empty")),
                                              handle.put(b"cd")))
    thread.start()
    got = []
    with pytest.raises(InvalidText, match="the text is empty"):
        async for chunk in handle:
            got.append(chunk)
    thread.join()
    assert got == [b"ab"]
    with pytest.raises(InvalidText):
        await handle.info


async def test_a_held_first_chunk_waits_for_the_latest_plan():
    """The engine plans a reply's hold again while its first chunk waits (engine/first_chunk_hold.py): the writer
    reads the plan as it changes. Planned 0.1 s, then 0.4 s from the first chunk: it waits at least 0.4 s; the next
    chunk, once the first is written, does not wait."""
    clock = PlaybackClock()
    handle = Handle(Request("Hi.", clock=clock), Recorder())
    clock.plan_hold(0.1, clock.began + 10.0)
    handle.put(b"first")
    handle.put(b"second")
    reader = asyncio.ensure_future(handle.__anext__())
    await asyncio.sleep(0.05)
    clock.plan_hold(0.4, clock.began + 10.0)
    assert await asyncio.wait_for(reader, 5) == b"first"
    assert clock.first_ready is not None and time.monotonic() - clock.first_ready >= 0.4
    clock.wrote(0.32)
    before = time.monotonic()
    assert await asyncio.wait_for(handle.__anext__(), 5) == b"second"
    assert time.monotonic() - before < 0.1


async def test_cancel_goes_to_the_control_once_and_not_after_the_end():
    control = Recorder()
    handle = Handle(Request("Hi."), control)
    handle.cancel()
    handle.cancel()
    assert control.calls == [("cancel",)]
    ended = Handle(Request("Hi."), control)
    ended.finish()
    await asyncio.sleep(0)
    ended.cancel()
    assert control.calls == [("cancel",)]


async def test_a_cancel_with_an_error_hands_the_reader_that_error_after_the_audio_made():
    handle = Handle(Request(None), Recorder())
    handle.put(b"ab")
    handle.cancel(InvalidText("the text is longer than 10 characters"))
    handle.fail(RequestFailed("the request was aborted"))  # the engine's abort, arriving behind the audio
    got = []
    with pytest.raises(InvalidText, match="longer than 10"):
        async for chunk in handle:
            got.append(chunk)
    assert got == [b"ab"]


async def test_an_open_text_goes_to_the_control_and_needed_only_once_for_a_deferred_request():
    control = Recorder()
    handle = Handle(Request(None, deferred=True), control)
    handle.feed("Hello")
    handle.feed(" there.")
    handle.close()
    handle.needed()
    handle.needed()
    Handle(Request("Hi."), control).needed()  # needed from the start: nothing to say
    assert control.calls == [("feed", "Hello"), ("feed", " there."), ("close",), ("needed",)]


async def test_codes_are_kept_only_when_asked_and_first_audio_is_timed_from_the_start():
    timed: list[float] = []
    kept = Handle(Request("Hi.", keep_codes=True), Recorder(), first_audio=timed.append)
    plain = Handle(Request("Hi."), Recorder())
    for handle in (kept, plain):
        handle.started("ryan", None, False)
        handle.add_codes(np.arange(16))
        handle.put(b"ab")
        handle.put(b"cd")
        handle.finish()
        await read(handle)
    assert [c.tolist() for c in kept.codes] == [list(range(16))] and kept.codes[0].dtype == np.int32
    assert plain.codes == []
    assert len(timed) == 1 and timed[0] >= 0  # the first chunk only


def test_a_producer_whose_loop_has_closed_is_not_disturbed():
    async def make() -> Handle:
        return Handle(Request("Hi."), Recorder())

    handle = asyncio.run(make())
    handle.put(b"ab")  # the loop is gone: nobody is left to hear it, and nothing raises
    handle.fail(RequestFailed("the engine stopped"))


# ---- sharing ---------------------------------------------------------------------------------------------------

class Sources:
    """The generations Sharing starts: each a real Handle whose producer side the test drives."""

    def __init__(self) -> None:
        self.started: list[tuple[Handle, Recorder]] = []

    def __call__(self, request: Request) -> Handle:
        control = Recorder()
        handle = Handle(request, control)
        self.started.append((handle, control))
        return handle


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_late_listener_hears_the_start_then_follows_live_and_is_counted():
    shared: list[int] = []
    sharing, sources = Sharing(1 << 20, lambda: shared.append(1)), Sources()
    first = sharing.open(Request("Dinner is ready."), sources)
    (source, _), = sources.started
    source.started("ryan", "en", True)
    source.put(b"ab")
    await settle()
    late = sharing.open(Request("Dinner is ready."), sources)
    source.put(b"cd")
    source.finish()
    assert await read(first) == await read(late) == [b"ab", b"cd"]
    assert await late.info == await first.info == RequestInfo("ryan", "en", True)
    assert len(sources.started) == 1 and shared == [1] and sharing.running == 0


async def test_different_requests_do_not_share_and_an_ended_generation_takes_no_one():
    sharing, sources = Sharing(1 << 20), Sources()
    sharing.open(Request("One."), sources)
    sharing.open(Request("One.", seed=3), sources)
    sharing.open(Request("Two."), sources)
    assert len(sources.started) == 3
    source = sources.started[0][0]
    source.finish()
    await settle()
    sharing.open(Request("One."), sources)
    assert len(sources.started) == 4


async def test_a_generation_longer_than_the_buffer_takes_no_new_listener():
    sharing, sources = Sharing(max_buffer_bytes=3), Sources()
    first = sharing.open(Request("Long."), sources)
    source = sources.started[0][0]
    source.put(b"abcd")
    await settle()
    sharing.open(Request("Long."), sources)
    assert len(sources.started) == 2
    source.finish()
    assert await read(first) == [b"abcd"]


async def test_any_listener_that_needs_its_audio_makes_the_generation_needed():
    sharing, sources = Sharing(1 << 20), Sources()
    ahead = sharing.open(Request("Hi.", deferred=True), sources)
    (source, control), = sources.started
    assert source.request.deferred and control.calls == []
    sharing.open(Request("Hi.", deferred=True), sources)
    assert control.calls == []
    ahead.needed()
    assert control.calls == [("needed",)]
    sharing.open(Request("Hi."), sources)  # needed from the start
    assert control.calls == [("needed",)]  # the source was needed already


async def test_only_the_last_listener_leaving_aborts_the_generation():
    sharing, sources = Sharing(1 << 20), Sources()
    leaving, staying = (sharing.open(Request("Hi."), sources) for _ in range(2))
    (source, control), = sources.started
    leaving.cancel()
    source.put(b"ab")
    source.finish()
    assert await read(staying) == [b"ab"]
    with pytest.raises(RequestFailed, match="aborted"):
        await read(leaving)
    assert control.calls == []
    alone = sharing.open(Request("Bye."), sources)
    source, control = sources.started[1]
    alone.cancel()
    assert control.calls == [("cancel",)] and sharing.running == 0


async def test_the_generations_error_reaches_every_listener():
    sharing, sources = Sharing(1 << 20), Sources()
    listeners = [sharing.open(Request("Hi."), sources) for _ in range(3)]
    sources.started[0][0].fail(QueueFull("the server is busy"))
    for listener in listeners:
        with pytest.raises(QueueFull, match="busy"):
            await read(listener)
        with pytest.raises(QueueFull):
            await listener.info
