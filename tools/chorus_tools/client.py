"""The one Wyoming TTS client of the tools: a request one-shot (`synthesize`) or streamed as Home Assistant streams an
LLM's reply (synthesize-start, text deltas, its compatibility `synthesize` copy, synthesize-stop), on a connection of
its own as Home Assistant opens one per request; it can hang up after N audio chunks. What it heard is recorded into
a `Reply` as it goes, so a caller that cancels the request keeps what arrived. Every wait is bounded by `timeout`;
a failure is recorded, never raised (a cancellation is re-raised).

For bytes no well-behaved client would send (the fuzzer), `send_raw` and `reset` work on a bare asyncio stream.
"""
from __future__ import annotations

import asyncio
import socket
import struct
import time
from dataclasses import dataclass, field

from wyoming.audio import AudioChunk, AudioStart
from wyoming.client import AsyncClient
from wyoming.error import Error
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from chorus_tools.probes import HOST


def tcp_uri(port: int) -> str:
    return f"tcp://{HOST}:{port}"


@dataclass(frozen=True)
class Stream:
    """How a streamed request sends its text: (seconds to wait before it, text) per synthesize-chunk, then, after
    `pause_before_stop`, Home Assistant's copy of the whole text (ignored inside a stream) and synthesize-stop."""
    deltas: list[tuple[float, str]]
    pause_before_stop: float = 0.0

    @classmethod
    def even(cls, text: str, chars: int, pause: float) -> Stream:
        """`chars` characters per delta, split mid-word, `pause` seconds after each: as an LLM streams."""
        pieces = [text[i:i + chars] for i in range(0, len(text), chars)]
        return cls([(0.0 if i == 0 else pause, piece) for i, piece in enumerate(pieces)], pause if pieces else 0.0)


@dataclass
class Reply:
    """What one request heard. Times are time.monotonic(); `started` is when its first event was sent."""
    started: float | None = None
    ended: float | None = None  # when it ended, failed, was cut or hung up
    chunks: list[tuple[float, float]] = field(default_factory=list)  # (arrival, seconds of audio in it)
    error: str | None = None  # the first error event's code, or why the request failed
    complete: bool = False  # its last event (audio-stop; synthesize-stopped for a stream) arrived
    hung_up: bool = False  # the client left after `hang_up_after` chunks, as asked

    @property
    def first_audio_s(self) -> float | None:
        return self.chunks[0][0] - self.started if self.chunks and self.started is not None else None

    @property
    def audio_s(self) -> float:
        return sum(seconds for _, seconds in self.chunks)

    def time_to_audio_s(self, seconds: float) -> float | None:
        """From the start to the chunk that brought the audio received to `seconds`; for a complete reply shorter
        than that, to its end (Home Assistant's ffmpeg releases its first sound at ~5 s of audio or the end)."""
        if self.started is None:
            return None
        total = 0.0
        for arrival, length in self.chunks:
            total += length
            if total >= seconds:
                return arrival - self.started
        return self.ended - self.started if self.complete and self.ended is not None and self.chunks else None

    @property
    def underruns(self) -> tuple[int, float]:
        """(times, seconds) a listener playing at 1x from the first chunk ran out of audio before the next one."""
        times, silence, runs_out = 0, 0.0, None
        for arrival, length in self.chunks:
            if runs_out is not None and arrival > runs_out:
                times, silence = times + 1, silence + arrival - runs_out
            runs_out = (arrival if runs_out is None or arrival > runs_out else runs_out) + length
        return times, silence

    @property
    def longest_gap_s(self) -> float:
        """The largest gap between two audio chunks of this reply."""
        return max((b[0] - a[0] for a, b in zip(self.chunks, self.chunks[1:], strict=False)), default=0.0)


async def speak(uri: str, text: str, stream: Stream | None = None, *, reply: Reply | None = None,
                timeout: float = 600.0, hang_up_after: int | None = None,
                first_audio: asyncio.Event | None = None) -> Reply:
    """One request on its own connection to `uri` (tcp://HOST:PORT or unix://PATH), recorded into `reply` as it goes.
    `hang_up_after`: leave after that many audio chunks. `first_audio`: set at the first audio chunk."""
    reply = reply if reply is not None else Reply()
    done_type = "synthesize-stopped" if stream is not None else "audio-stop"
    bytes_per_s = 0
    sender = None
    try:
        async with asyncio.timeout(timeout), AsyncClient.from_uri(uri) as client:
            reply.started = time.monotonic()
            if stream is not None:
                await client.write_event(SynthesizeStart().event())
                sender = asyncio.create_task(_send_stream(client, text, stream))
            else:
                await client.write_event(Synthesize(text).event())
            while (event := await client.read_event()) is not None:
                if AudioStart.is_type(event.type):
                    start = AudioStart.from_event(event)
                    bytes_per_s = start.rate * start.width * start.channels
                elif AudioChunk.is_type(event.type):
                    seconds = len(event.payload or b"") / bytes_per_s if bytes_per_s else 0.0
                    reply.chunks.append((time.monotonic(), seconds))
                    if first_audio is not None:
                        first_audio.set()
                    if hang_up_after is not None and len(reply.chunks) >= hang_up_after:
                        reply.hung_up = True
                        break
                elif Error.is_type(event.type):
                    reply.error = reply.error or Error.from_event(event).code or "error"
                elif event.type == done_type:
                    reply.complete = True
                    break
            else:
                reply.error = reply.error or "the server closed the connection"
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as failure:
        reply.error = reply.error or f"{type(failure).__name__}: {failure}"
    finally:
        reply.ended = time.monotonic()
        if sender is not None:
            sender.cancel()
    return reply


async def _send_stream(client: AsyncClient, text: str, stream: Stream) -> None:
    for pause, delta in stream.deltas:
        if pause:
            await asyncio.sleep(pause)
        await client.write_event(SynthesizeChunk(delta).event())
    if stream.pause_before_stop:
        await asyncio.sleep(stream.pause_before_stop)
    await client.write_event(Synthesize(text).event())  # Home Assistant's copy for servers that cannot stream
    await client.write_event(SynthesizeStop().event())


async def send_raw(writer: asyncio.StreamWriter, data: bytes, pieces: int) -> None:
    """`data` written in `pieces` parts (a short pause between them when there are more than two)."""
    step = max(len(data) // pieces, 1)
    try:
        for offset in range(0, len(data), step):
            writer.write(data[offset:offset + step])
            await writer.drain()
            if pieces > 2:
                await asyncio.sleep(0.001)
    except ConnectionError:
        pass  # the server may close as soon as it has read an event it refuses


def reset(writer: asyncio.StreamWriter) -> None:
    """Leave with a TCP reset instead of a close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()
