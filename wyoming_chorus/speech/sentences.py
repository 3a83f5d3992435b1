"""Sentences out of streamed text (LLM deltas), each handed out as soon as its end has arrived.

sentence-stream's SentenceBoundaryDetector does the bulk of the splitting, but it releases a sentence only once the
next one has begun ("you. It"), which for Home Assistant's LLM pipeline means never before the tool call ends. Three
layers around it:
- before: a sentence end with no space after it ("you.It": Home Assistant joins the messages before and after a tool
  call with nothing between them) gets a space, so the detector sees a boundary;
- after: a sentence the detector cut after a known abbreviation ("e.g. Apples") is joined to the next one;
- at a pause: text that ends with a sentence end is held only for a grace period (`hold`), then taken as a sentence
  (`flush_pending`) although nothing follows it.
The splitter keeps no clock: `hold` says how long to wait, the caller (wyoming/reply.StreamedText) does the waiting.
A text that is whole at once (a synthesize event's, the studio's preview) is cut the same way (`whole_text`).
"""
from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable

from sentence_stream import SentenceBoundaryDetector

# How long text that ends like a sentence ("for you.") waits for more before it is spoken. The next delta can still
# change it ("you." + "\"" or "?" + "!"), and an LLM sends its next delta within milliseconds, so this costs almost
# nothing; it is a small part of what a listener waits during a tool call (seconds) in any case.
GRACE = 0.2
# The same for an end that may not be one: a chunk boundary can fall right after the dot of "21.5", "Dr. Smith",
# "e.g." or "U.S.A.". Splitting there is heard (a sentence cut in two), so it waits longer: enough for a local LLM's
# gaps between tokens (~0.1-0.3 s on a small CPU) to pass, still short next to a tool call and next to the ~2 s a
# satellite waits for first audio. A sentence that really ends that way before a pause is rare.
AMBIGUOUS_GRACE = 0.6

# Words that a dot follows without ending the sentence. Compared casefolded; letter-dot runs (e.g., z.B., U.S.A.,
# J.) are recognised by their form and need no entry. "etc.", "usw." and "no." are missing on purpose: they mostly
# end one.
ABBREVIATIONS = frozenset({
    "dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "mt", "vs", "approx", "dept", "fig",  # English
    "nr", "hr", "fr", "bzw", "ca", "str", "tel", "inkl", "evtl", "ggf", "vgl",  # German
    "mme", "mlle", "sra", "núm", "pág",  # French, Spanish, Portuguese
})
_CLOSERS = "'\")]}\u2019\u201d\u00bb\u300d\u300f\uff09\u300b\u3011\u3015\u3009"  # ' " ) ] } ’ ” » 」 』 ） 》 】 〕 〉
_ENDERS = ".!?\u2026\u3002\uff01\uff1f"  # . ! ? … 。 ！ ？
_LETTER_DOTS = re.compile(r"(?:[^\W\d_]\.)+")  # e.g. z.B. U.S.A. J.
# A sentence end run into the next word: "you.It", "now!The", 'it."Then', "(above).It". The letter after it is checked
# for case in code (the re module has no \p{Lu}).
_JOINED_END = re.compile(rf"[\w{re.escape(_CLOSERS)}][{_ENDERS}]+[{re.escape(_CLOSERS)}]*(?=[^\W\d_])")
# Enough of the text already added to see the word before a dot that the next chunk's first letter follows.
_TAIL = 64


class StreamingSentences:
    """`add` returns the sentences that are complete now; when the text pauses, the caller waits `hold` seconds and
    then takes the held sentence with `flush_pending`; `finish` returns whatever is left at the end of the text."""

    def __init__(self) -> None:
        self._detector = SentenceBoundaryDetector()
        self._carry = ""  # a sentence the detector cut after an abbreviation, waiting for the one it belongs to
        self._tail = ""  # the end of the text added so far (with the spaces `_unjoin` put in)

    def add(self, text: str) -> list[str]:
        return self.add_text(text)[1]

    def add_text(self, text: str) -> tuple[str, list[str]]:
        """`add`, also returning the text as it was split: with a space put into each joined sentence end."""
        text = self._unjoin(text)
        self._tail = (self._tail + text)[-_TAIL:]
        return text, self._settle(self._detector.add_chunk(text))

    @property
    def hold(self) -> float | None:
        """How long the held text waits for more before `flush_pending` takes it; None: it does not end a sentence."""
        end = self._tail.rstrip().rstrip(_CLOSERS)
        if not end or end[-1] not in _ENDERS:
            return None
        return AMBIGUOUS_GRACE if _maybe_not_an_end(end) else GRACE

    def flush_pending(self) -> list[str]:
        """The text paused: the held text is a sentence if it ends like one."""
        if self.hold is None:
            return []
        rest = self._detector.finish()
        self._detector = SentenceBoundaryDetector()  # finish() ends a detector's stream: a new one for the next text
        return self._settle([rest], final=True)

    def finish(self) -> str | None:
        """The text is complete: everything still held, as one last sentence (None if there is nothing to say)."""
        sentences = self._settle([self._detector.finish()], final=True)
        return sentences[0] if sentences else None

    def _settle(self, sentences: Iterable[str], final: bool = False) -> list[str]:
        complete = []
        for sentence in sentences:
            if self._carry:
                sentence = f"{self._carry} {sentence}".strip()
                self._carry = ""
            if not final and _ends_with_abbreviation(sentence):
                self._carry = sentence
            elif any(c.isalnum() for c in sentence):  # not a stray "!" or quote left after an early release
                complete.append(sentence)
        return complete

    def _unjoin(self, text: str) -> str:
        """A space after every sentence end that runs into the next word, in `text` or where it meets the tail."""
        joined = self._tail + text
        cuts = []
        for match in _JOINED_END.finditer(joined):
            cut = match.end()
            if cut < len(self._tail) or not joined[cut].isupper():
                continue  # seen with the chunk it came in; or "file.txt"
            if _ends_with_abbreviation(joined[:match.start() + len(match.group().rstrip(_CLOSERS))]):
                continue  # "Dr.Smith", "U.S.A"
            cuts.append(cut - len(self._tail))
        for cut in reversed(cuts):
            text = f"{text[:cut]} {text[cut:]}"
        return text


async def whole_text(text: str) -> AsyncIterator[str]:
    """The sentences of a text that has arrived whole, as a stream's would be cut, for speech.sentence_audio."""
    splitter = StreamingSentences()
    for sentence in splitter.add(text):
        yield sentence
    if (rest := splitter.finish()) is not None:
        yield rest


def _last_word(text: str) -> str:
    """The last whitespace-separated word, without the brackets or quotes that open it: '(e.g.' -> 'e.g.'."""
    return text.rsplit(None, 1)[-1].lstrip("'\"([{\u2018\u201c\u00ab")


def _ends_with_abbreviation(text: str) -> bool:
    if not text.endswith("."):
        return False
    word = _last_word(text)
    return word[:-1].casefold() in ABBREVIATIONS or _LETTER_DOTS.fullmatch(word) is not None


def _maybe_not_an_end(text: str) -> bool:
    """Text ending in "." that more text could turn into no sentence end: an abbreviation, or "21." of "21.5"."""
    return text.endswith(".") and (_ends_with_abbreviation(text) or text[-2:-1].isdigit())
