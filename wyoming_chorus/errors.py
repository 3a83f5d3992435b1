"""Why a request failed, as the engine or the protocol handler raises it and the server reports it.

Each error carries the machine-readable `code` sent in the Wyoming `Error` event, so clients can tell a busy server
(try again) from bad input (don't). Messages are meant for the client.
"""


class ReplyError(Exception):
    """A reply that cannot be spoken (in full)."""

    code = "request-failed"


class MalformedEvent(ReplyError):
    """An event whose data lacks a field or has one of the wrong type."""

    code = "malformed-event"


class UnexpectedEvent(ReplyError):
    """An event out of order, e.g. synthesize-chunk without synthesize-start."""

    code = "unexpected-event"


class EngineError(ReplyError):
    """A request the engine could not serve."""


class QueueFull(EngineError):
    """Rejected on arrival: too many requests are already waiting."""

    code = "queue-full"


class UnknownVoice(EngineError):
    """The requested voice or speaker is not installed."""

    code = "unknown-voice"


class InvalidText(EngineError):
    """The text is empty or longer than the configured limit."""

    code = "invalid-text"


class RequestFailed(EngineError):
    """Accepted but could not finish (it never fits the KV pool, the engine stopped, ...)."""

    code = "request-failed"


class SetupError(Exception):
    """A problem with how the server was set up (model, device, precision, paths) that the user fixes: the command
    line prints its one-line message, which names the problem and the fix, and exits with code 2."""
