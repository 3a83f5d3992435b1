"""Speaking a text sentence by sentence: the audio of one reply's sentences, in order, with the next sentence
already generating while one is sent. The Wyoming speaker speaks its replies through it, the studio its previews.

Without lookahead, each sentence would only start once the previous one has finished generating, and a listener
hears a gap of one time-to-first-audio between sentences whenever generation runs near real time. With it, the next
sentence joins the continuous batch (where an extra request is nearly free) and its audio waits in its handle. A
sentence opened while another is being heard is deferred (made ahead of need) until its turn comes.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from wyoming_chorus.speech.api import Handle, Request, RequestInfo
from wyoming_chorus.speech.speech_engine import SpeechEngine
from wyoming_chorus.speech.utterances import Utterance

# Sentences of one reply generating at once: the one being sent and the next. More would let one long read-out take
# batch places that other rooms need, for audio nobody hears yet.
LOOKAHEAD = 2

_END = None


async def sentence_audio(engine: SpeechEngine, sentences: AsyncIterator[str | Utterance], voice: Request,
                         lookahead: int = LOOKAHEAD,
                         on_info: Callable[[RequestInfo], None] | None = None) -> AsyncGenerator[bytes, None]:
    """PCM of every sentence in order. An error (of the text or of a sentence) is raised where it occurs in the
    order, so the audio before it is still delivered. Closing the iterator aborts every sentence still running.
    `voice` is how every sentence is spoken (voice, speaker, language, seed, and the reply's playback clock as its
    listener hears it): each sentence's request is this one with the sentence's text. `on_info` is told what the
    engine chose for each sentence (voice, language), in the order they were opened."""
    slots = asyncio.Semaphore(lookahead)
    handles: asyncio.Queue[Handle | Exception | None] = asyncio.Queue()  # in order; then _END or an error
    opened: list[Handle] = []
    reading = False  # whether the reader is inside a sentence's audio

    async def open_all() -> None:
        try:
            async for sentence in sentences:
                await slots.acquire()
                # Nothing of this reply is queued before it: the listener waits for it now.
                needed_now = handles.empty() and not reading
                text = sentence if isinstance(sentence, str) else None
                handle = engine.open(dataclasses.replace(voice, text=text, deferred=not needed_now))
                if on_info is not None:
                    handle.info.add_done_callback(_told(on_info))
                if isinstance(sentence, Utterance):
                    sentence.attach(handle)
                opened.append(handle)
                handles.put_nowait(handle)
            handles.put_nowait(_END)
        except Exception as error:
            handles.put_nowait(error)

    opener = asyncio.create_task(open_all())
    try:
        while (handle := await _next(handles)) is not _END:
            handle.needed()  # its turn: from now on the listener waits for this sentence
            reading = True
            async for pcm in handle:
                yield pcm
            reading = False
            slots.release()
    finally:
        opener.cancel()
        await asyncio.gather(opener, return_exceptions=True)
        for handle in opened:
            handle.cancel()  # nothing for one that has ended


def _told(on_info: Callable[[RequestInfo], None]) -> Callable[[asyncio.Future], None]:
    def tell(info: asyncio.Future) -> None:
        if not info.cancelled() and info.exception() is None:
            on_info(info.result())
    return tell


async def _next(queue: asyncio.Queue) -> Any:
    item = await queue.get()
    if isinstance(item, Exception):
        raise item
    return item
