"""A voice reading a fixed text in a language, for the studio's preview: made exactly as the reply to a Wyoming
synthesize event is (the text cut into sentences by speech/sentences.whole_text, spoken by speech/sentence_audio,
on the serving loop, which the engine's Handles belong to), and handed to the studio's own loop piece by piece as it
is made, so the page plays it while the rest is still being generated.

Stopping early (the page went away, the deadline passed) closes the iterator, which cancels the work on the serving
loop: the engine request is aborted and its KV blocks are freed, as when a Wyoming client leaves.
"""
from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncGenerator

from wyoming_chorus.speech.api import Request
from wyoming_chorus.speech.sentence_audio import sentence_audio
from wyoming_chorus.speech.sentences import whole_text
from wyoming_chorus.speech.speech_engine import SpeechEngine

SENTENCES = {
    "en": "Hello! This is how I sound when I read out your announcements.",
    "de": "Hallo! So klinge ich, wenn ich eure Durchsagen vorlese.",
    "fr": "Bonjour ! Voici ma voix quand je lis vos annonces.",
    "es": "¡Hola! Así sueno cuando leo tus avisos.",
    "it": "Ciao! Ecco come suono quando leggo i tuoi avvisi.",
    "pt": "Olá! É assim que eu soo quando leio os seus avisos.",
    "ru": "Привет! Так звучит мой голос, когда я читаю ваши объявления.",
    "zh": "你好！这是我朗读通知时的声音。",
    "ja": "こんにちは！お知らせを読み上げるときの声です。",
    "ko": "안녕하세요! 알림을 읽어 드릴 때 제 목소리는 이렇습니다.",
}


def sentence(language: str | None) -> str:
    """The preview sentence of a language code ("de", "de_DE"); English for one without a sentence (or None)."""
    return SENTENCES.get((language or "en").lower().replace("-", "_").split("_")[0], SENTENCES["en"])


async def speak(engine: SpeechEngine, serving_loop: asyncio.AbstractEventLoop, text: str, voice: str,
                language: str | None) -> AsyncGenerator[bytes, None]:
    """int16 mono PCM of `text` in `voice`, at engine.sample_rate, as the engine makes it. Errors (ReplyError) are
    raised here as they are to a Wyoming reply."""
    here = asyncio.get_running_loop()
    pieces: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()

    def hand_over(item: bytes | BaseException | None) -> None:
        try:
            here.call_soon_threadsafe(pieces.put_nowait, item)
        except RuntimeError:  # the studio's loop has closed: nobody is left to hear it
            pass

    async def make() -> None:  # on the serving loop
        try:
            # As the Wyoming speaker speaks a synthesize event (wyoming/speaker.py).
            made = sentence_audio(engine, whole_text(text), Request(None, voice=voice, language=language))
            async with contextlib.aclosing(made) as pcm_chunks:
                async for pcm in pcm_chunks:
                    hand_over(pcm)
        except Exception as error:
            hand_over(error)
        else:
            hand_over(None)

    work = asyncio.run_coroutine_threadsafe(make(), serving_loop)
    try:
        while (item := await pieces.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        work.cancel()  # closes sentence_audio on the serving loop: the engine request is aborted


def wav_stream_header(sample_rate: int) -> bytes:
    """The header of a 16-bit mono WAV whose length is not known yet (the sizes say "to the end"), as streamed WAV
    is sent; browsers play it as it comes."""
    unknown = 0xFFFFFFFF
    return (b"RIFF" + struct.pack("<I", unknown) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sample_rate, sample_rate * 2, 2, 16)
            + b"data" + struct.pack("<I", unknown))

