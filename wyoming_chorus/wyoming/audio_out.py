"""One reply's audio events: audio-start, audio-chunk..., audio-stop and, for a stream, synthesize-stopped, each
exactly once."""
from __future__ import annotations

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.tts import SynthesizeStopped

from wyoming_chorus.wyoming.event_writer import EventWriter

SAMPLE_WIDTH = 2  # int16
CHANNELS = 1


class AudioOut:
    """One reply's audio: audio-start before the first chunk, chunks of at most `samples_per_chunk`, then its end.

    Each flag is set just before its event is written: wyoming buffers a whole event before it awaits the drain, so
    a shutdown that cancels the speaker mid-write never sends an event twice or leaves one out."""

    def __init__(self, out: EventWriter, rate: int, samples_per_chunk: int):
        self._out = out
        self._rate = rate
        self._chunk_bytes = samples_per_chunk * SAMPLE_WIDTH * CHANNELS
        self._started = False
        self._stopped = False
        self._stream_stopped = False

    async def write(self, pcm: bytes) -> None:
        await self._start()
        for offset in range(0, len(pcm), self._chunk_bytes):
            chunk = AudioChunk(self._rate, SAMPLE_WIDTH, CHANNELS, pcm[offset:offset + self._chunk_bytes])
            await self._out.write(chunk.event())

    async def end(self, streaming: bool) -> None:
        """audio-stop, then synthesize-stopped for a stream."""
        await self._start()
        if not self._stopped:
            self._stopped = True
            await self._out.write(AudioStop().event())
        if streaming and not self._stream_stopped:
            self._stream_stopped = True
            await self._out.write(SynthesizeStopped().event())

    async def _start(self) -> None:
        if not self._started:
            self._started = True
            await self._out.write(AudioStart(self._rate, SAMPLE_WIDTH, CHANNELS).event())
