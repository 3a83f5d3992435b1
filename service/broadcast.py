"""One generation for identical concurrent requests: a multi-room announcement is made once and heard everywhere.

Automations that bypass Home Assistant's TTS cache, or several satellites, send the same text at once. A request
whose text, voice, speaker, language and seed equal those of a generation still running attaches to it as one more
listener: it gets the PCM already made (kept in a bounded buffer) and then follows live. A listener that leaves
detaches alone; the generation is aborted only when its last listener has left.

A request without a seed of its own draws one at random; so did the running generation, so attaching to it is as
much a fair draw as a new one. Such requests share too (key seed None), which is what makes announcements share
by default: a fixed seed shares only with the same seed.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Hashable
from dataclasses import dataclass, field

_END = object()


@dataclass(eq=False)
class _Generation:
    key: Hashable
    buffer: list[bytes] = field(default_factory=list)
    buffered: int = 0
    listeners: list[asyncio.Queue] = field(default_factory=list)
    needed: asyncio.Event = field(default_factory=asyncio.Event)
    about: dict = field(default_factory=dict)
    open: bool = True  # new listeners may still attach: not ended, and the buffer still holds its start
    task: asyncio.Task | None = None


class Broadcasts:
    """The generations running now, by request key. `max_buffer_bytes` bounds the replay buffer of each: once a
    generation has made more, it takes no new listener (a late one starts its own)."""

    def __init__(self, max_buffer_bytes: int, on_shared: Callable[[], None] = lambda: None):
        self.max_buffer_bytes = max_buffer_bytes
        self._on_shared = on_shared
        self._running: dict[Hashable, _Generation] = {}

    @property
    def running(self) -> int:
        return len(self._running)

    async def listen(self, key: Hashable, start: Callable[[asyncio.Event, dict], AsyncIterator[bytes]],
                     needed: asyncio.Event | None, about: dict | None) -> AsyncGenerator[bytes, None]:
        """The PCM of the generation `key` names; `start(needed, about)` begins one when none can be joined."""
        generation = self._running.get(key)
        if generation is None or not generation.open:
            generation = _Generation(key)
            self._running[key] = generation
            generation.task = asyncio.create_task(self._produce(generation, start))
        else:
            self._on_shared()
        queue: asyncio.Queue = asyncio.Queue()
        for chunk in generation.buffer:  # what the others have heard already, then live
            queue.put_nowait(chunk)
        generation.listeners.append(queue)
        waiter = None
        if needed is None or needed.is_set():
            generation.needed.set()
        else:
            waiter = asyncio.create_task(_set_when(needed, generation.needed))
        try:
            while True:
                item = await queue.get()
                if about is not None and generation.about:  # the voice and language the generation chose
                    about.update(generation.about)
                    about = None
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if waiter is not None:
                waiter.cancel()
            generation.listeners.remove(queue)
            if not generation.listeners and generation.task is not None and not generation.task.done():
                generation.task.cancel()  # the last listener left: abort the generation
                with contextlib.suppress(asyncio.CancelledError):
                    await generation.task

    async def _produce(self, generation: _Generation, start) -> None:
        try:
            pcm = start(generation.needed, generation.about)
            try:
                async for chunk in pcm:
                    if generation.open:
                        generation.buffer.append(chunk)
                        generation.buffered += len(chunk)
                        if generation.buffered > self.max_buffer_bytes:
                            self._close(generation)  # too long to replay: no one new joins
                    for queue in generation.listeners:
                        queue.put_nowait(chunk)
            finally:
                await pcm.aclose()
            self._end(generation, _END)
        except asyncio.CancelledError:
            self._end(generation, _END)
            raise
        except Exception as error:
            self._end(generation, error)

    def _close(self, generation: _Generation) -> None:
        generation.open = False
        generation.buffer = []
        if self._running.get(generation.key) is generation:
            del self._running[generation.key]

    def _end(self, generation: _Generation, item) -> None:
        self._close(generation)
        for queue in generation.listeners:
            queue.put_nowait(item)


async def _set_when(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()
