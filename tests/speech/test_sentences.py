"""StreamingSentences: streamed text (LLM deltas) to sentences, each as soon as its end has arrived."""
from __future__ import annotations

import pytest

from wyoming_chorus.speech.sentences import AMBIGUOUS_GRACE, GRACE, StreamingSentences


def stream(*chunks: str) -> tuple[list[list[str]], str | None]:
    """What `add` returned for each chunk, and what `finish` returned, without any pause."""
    splitter = StreamingSentences()
    added = [splitter.add(chunk) for chunk in chunks]
    return added, splitter.finish()


def test_a_chunk_that_ends_a_sentence_is_held_for_the_grace_then_taken_at_a_pause():
    splitter = StreamingSentences()
    assert splitter.add("Let me check the weather for you.") == []
    assert splitter.hold == GRACE
    assert splitter.flush_pending() == ["Let me check the weather for you."]
    assert splitter.finish() is None


def test_home_assistants_tool_call_join_is_a_sentence_end():
    # The messages before and after a tool call, joined with nothing between them.
    assert stream("Let me check the weather for you.It is sunny.") == (
        [["Let me check the weather for you."]], "It is sunny.")
    assert stream("Let me check the weather for you.", "It is sunny.") == (
        [[], ["Let me check the weather for you."]], "It is sunny.")
    assert stream("Done!", "The lights are on.") == ([[], ["Done!"]], "The lights are on.")
    assert stream("See (above).", "It works.") == ([[], ["See (above)."]], "It works.")
    assert stream('He said "go."', "Then he left.") == ([[], ['He said "go."']], "Then he left.")


def test_the_join_after_a_pause_starts_a_sentence_of_its_own():
    splitter = StreamingSentences()
    splitter.add("Let me check the weather for you.")
    assert splitter.flush_pending() == ["Let me check the weather for you."]
    assert splitter.add("It is sunny. Bye") == ["It is sunny."]
    assert splitter.finish() == "Bye"


@pytest.mark.parametrize("chunks, sentence", [
    (("It is 21.", "5 degrees."), "It is 21.5 degrees."),
    (("Pi is 3", ".14 today."), "Pi is 3.14 today."),
    (("Call Dr.", " Smith now."), "Call Dr. Smith now."),
    (("Call Dr", ". Smith now."), "Call Dr. Smith now."),
    (("Ask Mrs.", " Jones and Mr.", " Brown."), "Ask Mrs. Jones and Mr. Brown."),
    (("Go to St.", " Paul."), "Go to St. Paul."),
    (("Fruit, e.g.", " Apples, are good."), "Fruit, e.g. Apples, are good."),
    (("Fruit, e.g. Apples, are good.",), "Fruit, e.g. Apples, are good."),
    (("Städte z.B.", " Berlin sind groß."), "Städte z.B. Berlin sind groß."),
    (("Zimmer Nr.", " 5 ist frei."), "Zimmer Nr. 5 ist frei."),
    (("Made in the U.S.", "A. Today."), "Made in the U.S.A. Today."),
    (("Dr.Smith is in.",), "Dr.Smith is in."),
])
def test_abbreviations_and_decimals_never_split_across_chunks(chunks, sentence):
    added, rest = stream(*chunks)
    assert added == [[] for _ in chunks] and rest == sentence


@pytest.mark.parametrize("text", ["It is 21.", "Call Dr.", "Fruit, e.g.", "Städte z.B.", "Made in the U.S.A."])
def test_an_end_that_may_not_be_one_is_held_longer(text):
    splitter = StreamingSentences()
    splitter.add(text)
    assert splitter.hold == AMBIGUOUS_GRACE > GRACE
    assert splitter.flush_pending() == [text]  # a pause that long: the text is what it is


def test_several_sentences_in_one_chunk():
    assert stream("Hi there. How are you? I am fine! Bye") == (
        [["Hi there.", "How are you?", "I am fine!"]], "Bye")


def test_a_chunk_that_ends_mid_sentence_is_held_without_a_grace():
    splitter = StreamingSentences()
    assert splitter.add("The weather is") == []
    assert splitter.hold is None
    assert splitter.flush_pending() == []
    assert splitter.add(" sunny today.") == []
    assert splitter.flush_pending() == ["The weather is sunny today."]


def test_chinese_and_japanese_sentence_ends():
    assert stream("你好。今天天气很好！", "明天呢？") == ([["你好。"], ["今天天气很好！"]], "明天呢？")
    splitter = StreamingSentences()
    assert splitter.add("こんにちは。") == []
    assert splitter.hold == GRACE
    assert splitter.flush_pending() == ["こんにちは。"]
    splitter.add("「はい。」")
    assert splitter.hold == GRACE  # a closing bracket after the end
    assert splitter.flush_pending() == ["「はい。」"]


def test_exclamation_question_marks_and_quotes_stay_with_their_sentence():
    assert stream("Really?! Yes.") == ([["Really?!"]], "Yes.")
    assert stream('She said "Hello!" Then', " left.") == ([['She said "Hello!"'], []], "Then left.")
    splitter = StreamingSentences()
    splitter.add('He asked "why?"')
    assert splitter.hold == GRACE
    assert splitter.flush_pending() == ['He asked "why?"']


def test_punctuation_left_after_a_pause_is_not_a_sentence():
    splitter = StreamingSentences()
    splitter.add("Really?")
    assert splitter.flush_pending() == ["Really?"]
    assert splitter.add("!") == []
    assert splitter.flush_pending() == []
    assert splitter.finish() is None


def test_a_pause_and_the_end_take_nothing_twice():
    splitter = StreamingSentences()
    splitter.add("Hi there.")
    assert splitter.flush_pending() == ["Hi there."]
    assert splitter.flush_pending() == []
    assert splitter.finish() is None
