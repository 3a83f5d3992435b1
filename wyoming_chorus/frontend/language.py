"""The language of a request that names none, told from its text.

Home Assistant's wyoming integration sends a voice and never a language, and voices.language defaults to auto: left
there, German text got English number words ("twenty-one,five degrees Celsius im Wohnzimmer") and the model no
language id. The language told from the text serves both.

py3langid (langid.py's naive Bayes over byte n-grams, its model inside the wheel) was chosen by
tools/bench_language.py: on short home-automation sentences it got as many right as lingua-language-detector with
fewer wrong (1 in 228 against 5), its probabilities keep a one-word reply ("OK", "Timer") apart from a sentence, and
a call costs about 50 µs, half of lingua's or less. Loading takes 0.5-1 s (decompressing the model) and 75 MB, once
per process (lingua: 1.5 s and 190 MB). The detector picks among Qwen3-TTS' languages and a few it lacks (Dutch,
Scandinavian, Polish, Czech), so that text in those is not taken for German but left to the model.

Not confident enough means no answer (None: the model decides, and the English number rules apply): a word or two
with no telling letters, digits and units alone ("21.5 °C"). Numbers and their units are dropped before detecting:
the "C" of "°C" and the "kWh" of a reading are letters of no language.

Text told to be in a language the voice does not speak (Dutch, Polish, Swedish: the model speaks none of them) is
still spoken, the model choosing how, with its numbers and units left as written: read with the words of another
language ("over eins uur" for Dutch "over 1 uur") they were neither language. `unspoken_note` names it for the
reply's one warning line.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from py3langid.langid import MODEL_FILE, LanguageIdentifier

# Qwen3-TTS' languages, as clients name them
LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "ru", "zh", "ja", "ko")
# Detected but never answered: without them, Dutch, Swedish or Polish text is read as German. They cost two right
# answers in a hundred, both English ("garage door" is Dutch enough), where no answer reads the same. Ukrainian is
# not among them: Russian would lose its short replies, which only it among the model's languages writes in Cyrillic.
_OTHERS = ("nl", "da", "sv", "no", "pl", "cs")
NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
         "ru": "Russian", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "nl": "Dutch", "da": "Danish",
         "sv": "Swedish", "no": "Norwegian", "pl": "Polish", "cs": "Czech"}
# More likely than all the other languages together; one word must be surer ("Okay" scores 0.5 German, "Non" 0.56
# Italian, while "Schlafzimmer" is 0.99 German).
_MIN_CONFIDENCE = 0.5
_MIN_CONFIDENCE_ONE_WORD = 0.7

# A number and the unit right after it ("21,5 °C", "12,4 kWh", "7 h 30", "5 km/h"): at most three letters.
_QUANTITY = re.compile(r"\d[\d.,:]*(?:\s?(?:°\s?[CFK]?|[^\W\d_]{1,3}(?:[/·][^\W\d_]{1,3})?[²³]?)(?![^\W\d_]))?")
_NOT_LETTERS = re.compile(r"[\W\d_]+")

_load_lock = threading.Lock()
_identifier: LanguageIdentifier | None = None


def load_detector() -> LanguageIdentifier:
    """The detector, loaded on first use (about a second) and shared by every thread; start-up may call it early."""
    global _identifier
    if _identifier is None:
        with _load_lock:
            if _identifier is None:
                identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
                identifier.set_languages([*LANGUAGES, *_OTHERS])
                _identifier = identifier
    return _identifier


def words_of(text: str) -> list[str]:
    """What the detector is shown of `text`: its words, without numbers, units and punctuation."""
    return _NOT_LETTERS.sub(" ", _QUANTITY.sub(" ", text)).split()


def identify(text: str) -> str | None:
    """The language of `text` among all the detector tells (the model's and `_OTHERS`), or None when it cannot be
    told with confidence."""
    words = words_of(text)
    if not words:
        return None
    code, confidence = load_detector().classify(" ".join(words))
    if confidence < (_MIN_CONFIDENCE if len(words) > 1 else _MIN_CONFIDENCE_ONE_WORD):
        return None
    return code


def detect_language(text: str, candidates: Iterable[str]) -> str | None:
    """The language of `text` among `candidates` (codes: "de", "de_DE"), or None when it cannot be told with
    confidence or is none of them (a voice's languages: the model is not made to read text in another)."""
    code = identify(text)
    return code if code is not None and _spoken(code, candidates) else None


def unspoken_language(text: str, candidates: Iterable[str]) -> str | None:
    """The language of `text` when it is told with confidence and is none of `candidates` ("nl" for Dutch text)."""
    code = identify(text)
    return code if code is not None and not _spoken(code, candidates) else None


def unspoken_note(code: str) -> str:
    """What the reply's warning says of text in `code`, a language the voice does not speak."""
    return f"{NAMES.get(code, code)} ({code}), which the model does not speak: spoken anyway, its numbers and units " \
           "left as written"


def choose_language(requested: str | None, voice_default: str | None, text: str,
                    candidates: Iterable[str]) -> tuple[str | None, bool]:
    """(code, detected): the request's language, else the voice's, else the one detected in `text` among
    `candidates`. "auto" counts as none; (None, False) leaves the language to the model."""
    for code in (requested, voice_default):
        if code and code.lower() != "auto":
            return code, False
    detected = detect_language(text, candidates)
    return detected, detected is not None


def _spoken(code: str, candidates: Iterable[str]) -> bool:
    return any(_primary(c) == code for c in candidates)


def _primary(code: str) -> str:
    return code.lower().replace("-", "_").split("_")[0]
