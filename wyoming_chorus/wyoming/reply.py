"""The text side of one reply as it arrives, handed out sentence by sentence: all at once (`OneShotText`, from a
synthesize event) or in stream chunks (`StreamedText`, from synthesize-start to synthesize-stop).

A stream's sentence is handed out once its end has arrived, without waiting for the next one to begin: when the
client pauses (Home Assistant runs a tool), the text that ends like a sentence is taken after the splitter's grace
(`StreamingSentences.hold`) has passed with no new text.

With `stream_input`, a stream is handed out as utterances instead (speech/utterances.py): each an async iterator of
text pieces, handed out once its first words have come and fed to one request while it speaks; the same pause after
a sentence end closes it. So does a longer pause anywhere else (`RELEASE_AFTER`): the client is calling a tool, and a
request waiting for text holds KV blocks (wyoming_chorus/engine/scheduler.py parks it), so it finishes the text it
has and lets them go; the text after the pause starts a new one. A paused stream then holds nothing in the engine,
which is why its pause limit can be as long as Home Assistant's own patience (config.yaml).

With `limits`, a stream that waits too long for its text is timed out (wyoming/stream_deadline.py): it fails with a
StreamTimeout and is complete without the client's synthesize-stop.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Sequence

from wyoming.tts import SynthesizeVoice

from wyoming_chorus.errors import InvalidText, ReplyError
from wyoming_chorus.speech.sentences import StreamingSentences
from wyoming_chorus.speech.utterances import OpenText, Utterance
from wyoming_chorus.wyoming.stream_deadline import StreamDeadline, StreamLimits, StreamTimeout

# How long an utterance whose text stopped short of a sentence end ("Here is what I found:", "Let me look that up on
# the") keeps its request waiting for more. Longer than any pause between an LLM's tokens (0.1-0.3 s on a small CPU,
# a stall of a second at worst), short next to a tool call (seconds to minutes). The listener loses nothing by it:
# a request waiting for text makes no audio, so the words it has are heard sooner, and the tool's silence comes after
# them instead of inside the last word.
RELEASE_AFTER = 2.0


class _Sentences:
    """Cuts a text into whole sentences (speech/sentences.py)."""

    def __init__(self) -> None:
        self._splitter = StreamingSentences()

    @property
    def hold(self) -> float | None:
        """How long the text held at a sentence end waits for more (None: it does not end a sentence)."""
        return self._splitter.hold

    @property
    def speaking(self) -> bool:
        """Whether a request is open in the engine, waiting for this text's next words."""
        return False

    def add(self, text: str) -> Sequence[str | Utterance]:
        return self._splitter.add(text)

    def pause(self) -> Sequence[str | Utterance]:
        """The text paused after a sentence end for the grace: the held text is taken now."""
        return self._splitter.flush_pending()

    def end(self) -> Sequence[str | Utterance]:
        rest = self._splitter.finish()
        return [rest] if rest else []

    def fail(self, error: ReplyError) -> None:
        """Nothing to tell: the reply drops the sentences not handed out yet."""


class _Utterances(_Sentences):
    """Cuts a stream into utterances (speech/utterances.py); the sentence splitter only says where a sentence ends
    (its pause grace) and puts a space into each joined sentence end."""

    def __init__(self) -> None:
        super().__init__()
        self._open = OpenText()

    def add(self, text: str) -> Sequence[str | Utterance]:
        return _started(self._open.add(self._splitter.add_text(text)[0]))

    @property
    def speaking(self) -> bool:
        return self._open.current is not None

    def pause(self) -> Sequence[str | Utterance]:
        self._splitter.flush_pending()  # the held sentence is in the utterance already; its detector starts anew
        return _started(self._open.end_utterance())

    def end(self) -> Sequence[str | Utterance]:
        return _started(self._open.end_utterance())

    def fail(self, error: ReplyError) -> None:
        self._open.fail(error)


def _started(utterance: Utterance | None) -> list[Utterance]:
    return [] if utterance is None else [utterance]


class ReplyText:
    """What both kinds share: the length limit, the error, and handing out what is complete in order."""

    streaming: bool  # whether the reply ends with synthesize-stopped too

    def __init__(self, voice: SynthesizeVoice | None, max_text_length: int, cuts: _Sentences):
        self.voice = voice
        self._max_text_length = max_text_length
        self._cuts = cuts
        self._length = 0
        self.text_since: float | None = None  # when the first text arrived
        self._ready: deque[str | Utterance] = deque()
        self._complete = False
        self._error: ReplyError | None = None
        self._changed = asyncio.Event()

    def add(self, text: str) -> None:
        if self._complete or self._error is not None:
            return
        self._length += len(text)
        if self.text_since is None and text.strip():
            self.text_since = time.monotonic()
        if self._length > self._max_text_length:  # checked before splitting: no regex over a huge text
            self.fail(InvalidText(f"the text is longer than {self._max_text_length} characters"))
            return
        self._cut(text)
        self._changed.set()

    def _cut(self, text: str) -> None:
        self._ready.extend(self._cuts.add(text))

    @property
    def characters(self) -> int:
        return self._length

    def finish(self) -> None:
        """The client has sent all the text."""
        if self._error is None:
            self._ready.extend(self._cuts.end())
        self._end_text()

    def _end_text(self) -> None:
        self._complete = True
        self._changed.set()

    def fail(self, error: ReplyError) -> None:
        """Speak nothing more; the first error is the one the client hears about."""
        if self._error is None:
            self._error = error
            self._ready.clear()
            self._cuts.fail(error)
            self._changed.set()

    async def sentences(self) -> AsyncIterator[str | Utterance]:
        """Complete sentences (or utterances) in order until the text is complete; raises the reply's error when
        it fails."""
        while True:
            if self._error is not None:
                raise self._error
            if self._ready:
                yield self._ready.popleft()
            elif self._complete:
                return
            else:
                await self._more()

    async def _more(self) -> None:
        """Until something has changed."""
        await self._wait()

    async def wait_complete(self) -> None:
        while not self._complete:
            await self._wait()

    async def _wait(self, timeout: float | None = None) -> None:
        self._changed.clear()
        # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that arrives just as the event is set (the
        # speaker is cancelled right after a chunk came), and the reply then goes on for a client that has left.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._changed.wait()


class OneShotText(ReplyText):
    """The whole text at once (synthesize), handed out as sentences."""

    streaming = False

    def __init__(self, voice: SynthesizeVoice | None, max_text_length: int):
        super().__init__(voice, max_text_length, _Sentences())


class StreamedText(ReplyText):
    """A stream's text, chunk by chunk (synthesize-chunk), handed out as sentences, or as utterances with
    `stream_input`; a sentence end is taken once the text has paused after it for the grace, an open utterance's
    text once it has paused for RELEASE_AFTER."""

    streaming = True

    def __init__(self, voice: SynthesizeVoice | None, max_text_length: int, stream_input: bool = False,
                 limits: StreamLimits | None = None):
        super().__init__(voice, max_text_length, _Utterances() if stream_input else _Sentences())
        self._pending_until: float | None = None  # when the held text is taken: it ends like a sentence, or speaks
        self.timed_out = False
        # A stream that failed still waits for its synthesize-stop: the deadline bounds that wait too.
        self._deadline = StreamDeadline(limits, self.time_out) if limits is not None else None

    def add(self, text: str) -> None:
        if not self._complete and self._deadline is not None:
            self._deadline.text_arrived()
        super().add(text)

    def _cut(self, text: str) -> None:
        super()._cut(text)
        # Every chunk restarts the grace: it is a pause in the text, not the age of the sentence, that ends it.
        hold = self._cuts.hold
        if hold is None and self._cuts.speaking:
            hold = RELEASE_AFTER
        self._pending_until = None if hold is None else time.monotonic() + hold

    async def _more(self) -> None:
        if self._pending_until is None:
            await self._wait()
        elif (grace := self._pending_until - time.monotonic()) > 0:
            await self._wait(timeout=grace)
        else:  # the text paused after a sentence's end, or long enough for a tool call: speak it now
            self._pending_until = None
            self._ready.extend(self._cuts.pause())

    def time_out(self, error: StreamTimeout) -> None:
        """The stream waited too long for its text: it fails (unless it had failed already: the first error is the
        one the client hears about) and is complete, so that its end is sent without the client's synthesize-stop.
        """
        if self._complete:
            return
        self.fail(error)
        self.timed_out = True
        self._end_text()

    def abandon(self) -> None:
        """The client left: no deadline may fire for it later (it would keep the reply alive for nothing)."""
        if self._deadline is not None:
            self._deadline.cancel()

    def _end_text(self) -> None:
        self._pending_until = None
        if self._deadline is not None:
            self._deadline.cancel()
        super()._end_text()


def reply_text(voice: SynthesizeVoice | None, streaming: bool, max_text_length: int) -> ReplyText:
    """The text of a one-shot reply, or of a stream cut into sentences with no time limits (the tests' Reply)."""
    return StreamedText(voice, max_text_length) if streaming else OneShotText(voice, max_text_length)
