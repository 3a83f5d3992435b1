"""The front-end thread: every request's text becomes a Sequence here, on one thread, which posts it straight into
the engine's inbox.

This thread alone uses the RequestBuilder (and with it the voices it finds, the clone caches, the language detector
and the prompt graph), so none of them needs a lock for the requests' sake. The event loop reaches it only through
its inbox (wyoming_chorus.inbox) of typed messages, which every request's `Ticket` puts there: Open, Feed, Close,
Needed, Cancel. Each becomes an engine message in the same order (Add, FeedText, Promote, Abort), so an abort can
never overtake the request it aborts, and text fed to a request always follows its Add.

An open text (a reply streamed while it is written) starts once its first pieces tell its language (see
`_LANGUAGE_WORDS`) and once its voice can take text while it speaks; until then its pieces wait here.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from wyoming_chorus.engine.sequence import Sequence
from wyoming_chorus.errors import EngineError, RequestFailed
from wyoming_chorus.frontend.language import choose_language, unspoken_note
from wyoming_chorus.frontend.requests import RequestBuilder, TextFeed
from wyoming_chorus.inbox import Inbox
from wyoming_chorus.speech.api import Handle

_LOG = logging.getLogger(__name__)

# A streamed text whose language is unclear from its first words starts once it has this many (or ends).
_LANGUAGE_WORDS = 8


class EngineInbox(Protocol):
    """The engine core's message methods (wyoming_chorus.engine.core.EngineCore)."""

    def add(self, seq: Sequence, sink: Handle) -> bool: ...
    def feed(self, seq_id: int, rows: np.ndarray, frame_cap: int, close: bool) -> None: ...
    def promote(self, seq_id: int) -> None: ...
    def abort(self, seq_id: int) -> None: ...


@dataclass(frozen=True)
class Open:
    ticket: Ticket
    handle: Handle


@dataclass(frozen=True)
class Feed:
    ticket: Ticket
    text: str


@dataclass(frozen=True)
class Close:
    ticket: Ticket


@dataclass(frozen=True)
class Needed:
    ticket: Ticket


@dataclass(frozen=True)
class Cancel:
    ticket: Ticket


@dataclass(frozen=True)
class Stop:
    pass


Message = Open | Feed | Close | Needed | Cancel | Stop


class Ticket:
    """The front end's end of one request: the Handle's control (its methods run on the loop and only post a
    message); its fields belong to the front-end thread alone, and die with the handle."""

    def __init__(self, front_end: FrontEnd):
        self._front_end = front_end
        self.handle: Handle | None = None
        self.text = ""                     # an open text's pieces while it waits to start
        self.closed = False                # the text is complete
        self.is_needed = False             # Handle.needed() came
        self.ended = False                 # failed or cancelled: what comes later is ignored
        self.seq_id: int | None = None     # in the engine
        self.feed_rows: TextFeed | None = None

    def open(self, handle: Handle) -> None:
        self._front_end.post(Open(self, handle))

    def feed(self, handle: object, text: str) -> None:
        self._front_end.post(Feed(self, text))

    def close(self, handle: object) -> None:
        self._front_end.post(Close(self))

    def needed(self, handle: object) -> None:
        self._front_end.post(Needed(self))

    def cancel(self, handle: object) -> None:
        self._front_end.post(Cancel(self))


class FrontEnd:
    def __init__(self, builder: RequestBuilder, engine: EngineInbox):
        self.builder = builder
        self._engine = engine
        # Closed by the thread when it ends, which then refuses what is left; a message posted later is refused by its
        # poster (wyoming_chorus.inbox): no request waits for ever.
        self._inbox: Inbox[Message] = Inbox()
        self._thread = threading.Thread(target=self._run, name="chorus-frontend", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        self.post(Stop())
        if self._thread.ident is not None:  # a start that failed earlier (the warm-up) left no thread to join
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return not self._inbox.closed and self._thread.is_alive()

    def ticket(self) -> Ticket:
        return Ticket(self)

    def post(self, message: Message) -> None:
        if not self._inbox.put(message):
            self._refuse(message)

    # ---- the front-end thread ------------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not isinstance(message := self._inbox.get(), Stop):
                if message is not None:
                    self._process(message)
        finally:
            for message in self._inbox.close():
                self._refuse(message)

    def _refuse(self, message: Message) -> None:
        """Fails the request of a message the thread will not read, unless the engine holds it (the engine fails
        those it holds when it stops)."""
        if isinstance(message, Stop):
            return
        handle = message.handle if isinstance(message, Open) else message.ticket.handle
        if handle is not None and message.ticket.seq_id is None:
            handle.fail(RequestFailed("the engine is not running"))

    def _process(self, message: Message) -> None:
        if isinstance(message, Stop):
            return
        ticket = message.ticket
        if isinstance(message, Open):
            ticket.handle = message.handle
        if ticket.ended:
            return
        try:
            if isinstance(message, Open):
                self._open(ticket)
            elif isinstance(message, Feed):
                self._feed(ticket, message.text)
            elif isinstance(message, Close):
                ticket.closed = True
                self._close(ticket)
            elif isinstance(message, Needed):
                ticket.is_needed = True
                if ticket.seq_id is not None:
                    self._engine.promote(ticket.seq_id)
            else:  # Cancel: in the engine, its abort reaches the reader behind the audio already made
                self._end(ticket, None if ticket.seq_id is not None else RequestFailed("the request was aborted"))
        except EngineError as error:  # the text cannot be spoken (InvalidText, UnknownVoice, ...)
            self._end(ticket, error)
        except Exception as error:  # a bug: this request fails, the others go on
            _LOG.exception("the front end failed on a request")
            self._end(ticket, error)

    def _open(self, ticket: Ticket) -> None:
        assert ticket.handle is not None
        text = ticket.handle.request.text
        if text is not None:
            ticket.closed = True
            self._start(ticket, text)

    def _feed(self, ticket: Ticket, piece: str) -> None:
        if ticket.seq_id is None:
            ticket.text += piece
            if self._may_start(ticket):
                self._start(ticket, ticket.text)
        elif ticket.feed_rows is not None:
            rows, cap = ticket.feed_rows.rows(piece)
            if len(rows):
                self._engine.feed(ticket.seq_id, rows, cap, close=False)

    def _close(self, ticket: Ticket) -> None:
        if ticket.seq_id is None:
            self._start(ticket, ticket.text)
        elif ticket.feed_rows is not None:
            rows, cap = ticket.feed_rows.close()
            self._engine.feed(ticket.seq_id, rows, cap, close=True)

    def _may_start(self, ticket: Ticket) -> bool:
        """Whether an open text may start with what it has: its voice takes text while it speaks (an in-context
        clone does not: its text track lies over the clip's codes inside the prompt, so the whole text comes
        first), and its language is clear from its first words."""
        assert ticket.handle is not None
        request = ticket.handle.request
        return self.builder.can_stream(request.voice, request.speaker) and not self._language_unclear(ticket)

    def _language_unclear(self, ticket: Ticket) -> bool:
        """Whether the start of a streamed text is too short to tell its language (when neither the request nor
        the voice names one): "Es sind 21,5 °C" is two words once numbers are left out."""
        assert ticket.handle is not None
        request = ticket.handle.request
        chosen = self.builder.voices.find(request.voice, request.speaker)
        named = [code for code in (request.language, chosen.language) if code and code.lower() != "auto"]
        if named or len(ticket.text.split()) >= _LANGUAGE_WORDS:
            return False
        return choose_language(None, None, ticket.text, chosen.languages)[0] is None

    def _start(self, ticket: Ticket, text: str) -> None:
        """Builds the request and posts it to the engine; an open text's rest follows it as it comes."""
        handle = ticket.handle
        assert handle is not None
        request = handle.request
        streams = request.text is None and self.builder.can_stream(request.voice, request.speaker)
        args = (text, request.voice, request.speaker, request.language, request.seed)
        feed_rows = None
        if streams:
            seq, feed_rows = self.builder.build_open(*args)
        else:
            seq = self.builder.build(*args)
        seq.deferred = request.deferred and not ticket.is_needed
        seq.clock = request.clock
        assert seq.voice is not None  # the builder names the voice it found
        # Text in a language the voice does not speak is spoken anyway; the reply's log warns once (ReplyLog).
        unspoken = None if seq.language else self.builder.unspoken_language(text, request.voice, request.speaker)
        handle.started(seq.voice, seq.language, seq.language_detected, unspoken_note(unspoken) if unspoken else None)
        if not self._engine.add(seq, handle):
            raise RequestFailed("the engine is not running")
        ticket.seq_id, ticket.feed_rows = seq.id, feed_rows
        if ticket.closed:
            self._close(ticket)

    def _end(self, ticket: Ticket, error: BaseException | None) -> None:
        """The request ends here: the engine aborts it if it holds it, and its reader gets `error` (if given)."""
        ticket.ended = True
        if ticket.seq_id is not None:
            self._engine.abort(ticket.seq_id)
        if error is not None and ticket.handle is not None:
            ticket.handle.fail(error)
