"""A streamed reply spoken while it is written: its text cut into utterances, each fed to one running request.

An utterance is the text between two pauses after a sentence end: Home Assistant's tool-call pause ends one, and
the text after it starts the next. Within an utterance the text goes to the engine in pieces cut before a
whitespace, so that each piece tokenises as it would inside the whole text (the BPE pre-tokeniser splits there
too, the space going with the next word). A piece whose last word has a digit waits for the next word: "21.5" and
"°C" are normalised together. An utterance starts once it has FIRST_WORDS words (or its text ends), which gives the
language detector and the first frames something to go on; a complete short sentence ("Hi there.") starts one too.
"""
from __future__ import annotations

import re

from wyoming_chorus.speech.api import Handle

FIRST_WORDS = 3

_WHITESPACE = re.compile(r"\s+")
_ENDERS = ".!?;:…。！？"
_CLOSERS = "\"')]}»”’"


class Utterance:
    """The pieces of one utterance's text as they are cut: held until the utterance is given to its request
    (`attach`), then passed on as they come; then its end, or the reply's error."""

    def __init__(self, first: str):
        self._pieces = [first]
        self._end: BaseException | bool = False  # True: closed; an error: failed
        self._target: Handle | None = None

    @property
    def closed(self) -> bool:
        return self._end is not False

    def put(self, piece: str) -> None:
        if self.closed:
            return
        if self._target is None:
            self._pieces.append(piece)
        else:
            self._target.feed(piece)

    def close(self) -> None:
        if not self.closed:
            self._end = True
            if self._target is not None:
                self._target.close()

    def fail(self, error: BaseException) -> None:
        """The reply failed: its request is aborted, and its reader hears `error` after the audio made so far."""
        if not self.closed:
            self._end = error
            if self._target is not None:
                self._target.cancel(error)

    def attach(self, target: Handle) -> None:
        """Every piece so far goes to `target`, then the end if it came; later ones as they come."""
        self._target = target
        for piece in self._pieces:
            target.feed(piece)
        self._pieces = []
        if self._end is True:
            target.close()
        elif self._end is not False:
            target.cancel(self._end)


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
