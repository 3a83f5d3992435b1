"""Events to one client, with back-pressure bounded in time (config.yaml's server.max_buffered_audio_seconds): a
client that falls that far behind in reading its audio and does not catch up within as many seconds gets an `error`
and is cut off; its reply is aborted (the engine never waits for it)."""
from __future__ import annotations

import asyncio
import contextlib
import logging

from wyoming.error import Error
from wyoming.event import Event, async_write_event

from wyoming_chorus.errors import ReplyError

_LOG = logging.getLogger(__name__)


class ClientTooSlow(ConnectionError):
    """The client is more than server.max_buffered_audio_seconds behind in reading its audio."""


class EventWriter:
    """Writes the events of one connection; `peer` names the client in the log."""

    def __init__(self, writer: asyncio.StreamWriter, max_buffered_audio_seconds: float, bytes_per_second: int,
                 peer: str):
        self._writer = writer
        self._seconds = max_buffered_audio_seconds
        self._peer = peer
        # drain() waits once this much audio is buffered (asyncio's 64 KiB would be 0.7 s): see write.
        writer.transport.set_write_buffer_limits(high=round(max_buffered_audio_seconds * bytes_per_second))

    async def write(self, event: Event) -> None:
        """Writes, then waits while max_buffered_audio_seconds of audio are unread, as long as that many seconds;
        then the client is cut off. It is the time that counts, not only the size: the audio of a sentence made
        ahead arrives all at once, more than a client that reads at full speed can take in at once."""
        seconds = self._seconds
        timer = asyncio.timeout(seconds)
        try:
            async with timer:
                await async_write_event(event, self._writer)
        except TimeoutError:
            if not timer.expired():
                raise
            _LOG.info("%s has not read its last %g s of audio in %g s (server.max_buffered_audio_seconds): "
                      "cutting it off", self._peer, seconds, seconds)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0):  # into the buffer, behind the audio: no waiting for it to drain
                    await async_write_event(Error(text=f"{seconds:g} s of audio unread", code="client-too-slow")
                                            .event(), self._writer)
            raise ClientTooSlow(f"{seconds:g} s of audio unread for {seconds:g} s") from None

    async def error(self, error: ReplyError) -> None:
        """A reply's `error` event."""
        _LOG.info("error reply: %s (%s)", error, error.code)
        await self.write(Error(text=str(error), code=error.code).event())
