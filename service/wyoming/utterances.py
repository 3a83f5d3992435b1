"""A streamed reply spoken while it is written: its text cut into utterances, each fed to one running request.

An utterance is the text between two pauses after a sentence end: Home Assistant's tool-call pause ends one, and
the text after it starts the next. Within an utterance the text goes to the engine in pieces cut before a
whitespace, so that each piece tokenises as it would inside the whole text (the BPE pre-tokeniser splits there
too, the space going with the next word). A piece whose last word has a digit waits for the next word: "21.5" and
"°C" are normalised together. An utterance starts once it has FIRST_WORDS words (or its text ends), which gives the
language detector and the first frames something to go on; a complete short sentence ("Hi there.") starts one too.
"""
from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator

FIRST_WORDS = 3

_WHITESPACE = re.compile(r"\s+")
_ENDERS = ".!?;:…。！？"
_CLOSERS = "\"')]}»”’"


class Utterance:
    """The pieces of one utterance's text as they are cut: an async iterator that ends when it is closed."""

    def __init__(self, first: str):
        self._queue: asyncio.Queue[str | BaseException | None] = asyncio.Queue()
        self._queue.put_nowait(first)
        self.closed = False

    def put(self, piece: str) -> None:
        if not self.closed:
            self._queue.put_nowait(piece)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    def fail(self, error: BaseException) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(error)

    async def __aiter__(self) -> AsyncGenerator[str, None]:
        while (item := await self._queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item


def cut_point(text: str, first: bool) -> int:
    """Where the text that can go to the engine now ends: before the last whitespace that follows a word without a
    digit (and, for an utterance's first piece, after FIRST_WORDS words); 0 when nothing can go yet."""
    starts = [match.start() for match in _WHITESPACE.finditer(text) if match.start() > 0]
    for start in reversed(starts):
        head = text[:start]
        last_word = head.rsplit(None, 1)[-1] if head.strip() else ""
        if not last_word or any(c.isdigit() for c in last_word):
            continue
        if first and len(head.split()) < FIRST_WORDS and last_word.rstrip(_CLOSERS)[-1:] not in _ENDERS:
            return 0  # "Hi there." may start one; "The" may not
        return start
    return 0


class OpenText:
    """The text of a streamed reply not yet given to an utterance, and the utterance it goes to."""

    def __init__(self) -> None:
        self._text = ""
        self.current: Utterance | None = None

    def add(self, text: str) -> Utterance | None:
        """Adds text; returns a new utterance when this text starts one."""
        self._text += text
        return self._give(cut_point(self._text, first=self.current is None))

    def end_utterance(self) -> Utterance | None:
        """A pause after a sentence end (or the end of the text): all that is held goes out and the utterance is
        closed. Returns a new utterance when the held text had to start one (it is closed already)."""
        started = self._give(len(self._text))
        if self.current is not None:
            self.current.close()
            self.current = None
        return started

    def fail(self, error: BaseException) -> None:
        if self.current is not None:
            self.current.fail(error)
            self.current = None
        self._text = ""

    def _give(self, cut: int) -> Utterance | None:
        piece, self._text = self._text[:cut], self._text[cut:]
        if not piece.strip():
            self._text = piece + self._text
            return None
        if self.current is None:
            self.current = Utterance(piece.lstrip())
            return self.current
        self.current.put(piece)
        return None
