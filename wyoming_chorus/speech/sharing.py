"""One generation for identical concurrent requests: a multi-room announcement is made once and heard everywhere.

Automations that bypass Home Assistant's TTS cache, or several satellites, send the same text at once. A request
whose text, voice, speaker, language and seed equal those of a generation still running attaches to it as one more
listener: its handle gets the PCM already made (kept in a bounded buffer) and then follows live. A listener that
leaves detaches alone; the generation is aborted only when its last listener has left. A listener that needs its
audio now (or says so later) makes the generation needed.

A request without a seed of its own draws one at random; so did the running generation, so attaching to it is as
much a fair draw as a new one. Such requests share too (key seed None), which is what makes announcements share
by default: a fixed seed shares only with the same seed.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from wyoming_chorus.errors import RequestFailed
from wyoming_chorus.speech.api import Handle, Request


class Sharing:
    """The generations running now, by request. `max_buffer_bytes` bounds the replay buffer of each: once a
    generation has made more, it takes no new listener (a late one starts its own)."""

    def __init__(self, max_buffer_bytes: int, on_shared: Callable[[], None] = lambda: None):
        self.max_buffer_bytes = max_buffer_bytes
        self._on_shared = on_shared
        self._running: dict[Request, _Generation] = {}

    @property
    def running(self) -> int:
        return len(self._running)

    def open(self, request: Request, start: Callable[[Request], Handle]) -> Handle:
        """A listener's handle on the generation of `request` (a whole text); `start(request)` begins one when
        none can be joined."""
        key = dataclasses.replace(request, deferred=False)
        generation = self._running.get(key)
        if generation is None or not generation.open:
            generation = self._running[key] = _Generation(self, key, start(request))
        else:
            self._on_shared()
        return generation.listen(request)

    def _forget(self, generation: _Generation) -> None:
        if self._running.get(generation.key) is generation:
            del self._running[generation.key]


class _Generation:
    """One source handle read into every listener's handle; the Control of those handles."""

    def __init__(self, sharing: Sharing, key: Request, source: Handle):
        self._sharing = sharing
        self.key = key
        self._source = source
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._listeners: list[Handle] = []
        self.open = True  # new listeners may still attach: not ended, and the buffer still holds its start
        source.info.add_done_callback(self._info_known)
        self._pump = asyncio.create_task(self._read())

    def listen(self, request: Request) -> Handle:
        listener = Handle(request, self)
        info = self._source.info
        if info.done() and not info.cancelled() and info.exception() is None:
            listener.started(**dataclasses.asdict(info.result()))
        for chunk in self._buffer:  # what the others have heard already, then live
            listener.put(chunk)
        self._listeners.append(listener)
        if not request.deferred:
            self._source.needed()
        return listener

    # ---- Control of the listeners' handles -----------------------------------------------------------------------
    def feed(self, handle: Handle, text: str) -> None:
        raise TypeError("a shared request has its whole text")

    def close(self, handle: Handle) -> None:
        raise TypeError("a shared request has its whole text")

    def needed(self, handle: Handle) -> None:
        self._source.needed()

    def cancel(self, handle: Handle) -> None:
        if handle in self._listeners:
            self._listeners.remove(handle)
        handle.fail(RequestFailed("the request was aborted"))
        if not self._listeners:  # the last listener left: abort the generation
            self._close()
            self._source.cancel()

    # ---- the source ----------------------------------------------------------------------------------------------
    def _info_known(self, info: asyncio.Future) -> None:
        if not info.cancelled() and info.exception() is None:
            for listener in self._listeners:
                listener.started(**dataclasses.asdict(info.result()))

    async def _read(self) -> None:
        error: BaseException | None = None
        try:
            async for chunk in self._source:
                if self.open:
                    self._buffer.append(chunk)
                    self._buffered += len(chunk)
                    if self._buffered > self._sharing.max_buffer_bytes:
                        self._close()  # too long to replay: no one new joins
                for listener in self._listeners:
                    listener.put(chunk)
        except Exception as failure:
            error = failure
        self._close()
        for listener in self._listeners:
            if error is None:
                listener.finish()
            else:
                listener.fail(error)

    def _close(self) -> None:
        self.open = False
        self._buffer = []
        self._sharing._forget(self)
