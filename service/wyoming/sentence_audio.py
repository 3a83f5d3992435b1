"""The audio of one reply's sentences, in order, with the next sentence already generating while one is sent.

Without lookahead, each sentence would only start once the previous one has finished generating, and a listener
hears a gap of one time-to-first-audio between sentences whenever generation runs near real time. With it, the next
sentence joins the continuous batch (where an extra request is nearly free) and its audio waits in a queue.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from wyoming.tts import SynthesizeVoice

from service.wyoming.speech_engine import SpeechEngine
from service.wyoming.utterances import Utterance

# Sentences of one reply generating at once: the one being sent and the next. More would let one long read-out take
# batch places that other rooms need, for audio nobody hears yet.
LOOKAHEAD = 2

_END = None


async def sentence_audio(engine: SpeechEngine, sentences: AsyncIterator[str | Utterance], voice: SynthesizeVoice,
                         lookahead: int = LOOKAHEAD, about: dict | None = None) -> AsyncGenerator[bytes, None]:
    """PCM of every sentence in order. An error (of the text or of a sentence) is raised where it occurs in the
    order, so the audio before it is still delivered. Closing the iterator aborts every sentence still running.
    `about` is handed to every sentence's request: the engine notes the voice and language it chose there."""
    slots = asyncio.Semaphore(lookahead)
    streams: asyncio.Queue = asyncio.Queue()  # one queue of PCM per sentence, in order; then _END or an error
    tasks: list[asyncio.Task] = []

    async def generate(sentence: str | Utterance, out: asyncio.Queue, needed: asyncio.Event) -> None:
        try:
            chunks = engine.synthesize(sentence, voice=voice.name, speaker=voice.speaker, language=voice.language,
                                       needed=needed, about=about)
            async with contextlib.aclosing(chunks):
                async for pcm in chunks:
                    out.put_nowait(pcm)
            out.put_nowait(_END)
        except Exception as error:  # handed to the reader, in order
            out.put_nowait(error)

    async def feed() -> None:
        try:
            async for sentence in sentences:
                await slots.acquire()
                out: asyncio.Queue = asyncio.Queue()
                needed = asyncio.Event()
                if streams.empty() and not reading.is_set():
                    needed.set()  # nothing of this reply is queued before it: the listener waits for it now
                tasks.append(asyncio.create_task(generate(sentence, out, needed)))
                streams.put_nowait((out, needed))
            streams.put_nowait(_END)
        except Exception as error:
            streams.put_nowait(error)

    reading = asyncio.Event()  # set while the reader is inside a sentence's audio
    tasks.append(asyncio.create_task(feed()))
    try:
        while (stream := await _next(streams)) is not _END:
            out, needed = stream
            needed.set()  # its turn: from now on the listener waits for this sentence
            reading.set()
            while (pcm := await _next(out)) is not _END:
                yield pcm
            reading.clear()
            slots.release()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _next(queue: asyncio.Queue) -> Any:
    item = await queue.get()
    if isinstance(item, Exception):
        raise item
    return item
