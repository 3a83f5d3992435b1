"""How a streamed reply's text is cut for speaking while it is written (wyoming_chorus/speech/utterances.py)."""
from __future__ import annotations

import pytest

from wyoming_chorus.speech.utterances import OpenText, cut_point


@pytest.mark.parametrize("text, first, cut", [
    ("The", True, 0),                                  # one word: wait for more
    ("The washing machine", True, 0),                  # its last word may still grow: "machine" -> "machines"
    ("The washing machine in", True, 19),              # three words before the last space
    ("Hi there. B", True, 9),                          # a complete short sentence may start one
    (" in the", False, 3),                             # later pieces: any word, the space going with the next
    (" it is 21.5 °C", False, 6),                      # "21.5" waits for its unit
    (" it is 21.5 °C now", False, 14),
    ("no-space-yet", False, 0),
    ("  ", False, 0),
])
def test_the_cut_comes_before_a_whitespace_after_a_word_without_digits(text, first, cut):
    assert cut_point(text, first) == cut


class _Pieces(list):
    """A request's end of an utterance (what a Handle takes): the pieces it was given; a cancel raises its error."""
    closed = False

    def feed(self, text: str) -> None:
        self.append(text)

    def close(self) -> None:
        self.closed = True

    def cancel(self, error: BaseException | None = None) -> None:
        raise error or AssertionError("cancelled without an error")


def _collect(utterance) -> list[str]:
    pieces = _Pieces()
    utterance.attach(pieces)
    assert pieces.closed
    return pieces


def test_pieces_join_to_the_text_and_each_later_piece_starts_with_its_space():
    text = "The washing machine in the basement has finished its cycle, and it is 21.5 °C outside."
    open_text = OpenText()
    started = []
    for i in range(0, len(text), 5):  # an LLM's deltas, cut mid-word
        if (utterance := open_text.add(text[i:i + 5])) is not None:
            started.append(utterance)
    assert open_text.end_utterance() is None and len(started) == 1
    pieces = _collect(started[0])
    assert "".join(pieces) == text
    assert all(piece[0].isspace() for piece in pieces[1:])
    assert not any(piece.rstrip().endswith("21.5") for piece in pieces)


def test_a_pause_closes_the_utterance_and_the_next_text_starts_another():
    open_text = OpenText()
    first = open_text.add("Let me check the lights. ")
    assert first is not None
    assert open_text.end_utterance() is None  # the pause after "lights."
    second = open_text.add("They are all off now")
    assert second is not None and second is not first
    assert open_text.end_utterance() is None
    assert "".join(_collect(first)) == "Let me check the lights."
    assert "".join(_collect(second)) == "They are all off now"


def test_a_short_text_starts_its_utterance_at_its_end():
    open_text = OpenText()
    assert open_text.add("Okay") is None
    utterance = open_text.end_utterance()
    assert utterance is not None and _collect(utterance) == ["Okay"]


def test_a_failed_reply_fails_the_open_utterance():
    open_text = OpenText()
    utterance = open_text.add("The front door is")
    open_text.fail(ValueError("too long"))
    with pytest.raises(ValueError, match="too long"):
        _collect(utterance)
