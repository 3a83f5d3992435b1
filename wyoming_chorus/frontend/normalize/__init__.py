"""Spoken words for what home-automation announcements are full of: numbers, decimals, signs, times, dates, units,
ranges, percentages and money, in the language of the request. Runs before tokenisation.

Why: the model reads "21.5 °C", "07:30" or "1,234" by guesswork (is the comma a decimal mark? is "m" metres or
minutes? which language are the digits in?). Spelling them out takes the guess away. num2words gives the number
words of each language; the lang_*.py tables give everything around them, and speller.py applies them.

Coverage: English, German, French, Spanish, Italian, Portuguese (European; Brazilian for pt_BR) and Russian, in
full. Chinese, Japanese and Korean keep their digits, which the model reads natively and whose reading depends on
the counter after them (Japanese 三百 "sanbyaku", Korean native hours and Sino-Korean minutes, Chinese 两点 for
2:00): what is expanded there is what the model cannot read from digits, see lang_cjk.py. Text in a language the
model does not speak (Dutch, Polish, Turkish) is left as written: read with another language's words it came out as
neither ("over eins uur"), while the model may still say digits it has seen in that language. Language "auto"
(nothing detected) applies the English rules, or the CJK ones to text in those scripts.
Not handled: slash dates in English (11/29 or 29/11 is ambiguous), seconds in times, plain ranges without a unit
("5-10"), month abbreviations ("3 Feb"); the gender of a noun after a number is told from its ending (German,
Spanish, Italian, Portuguese, Russian), which a few nouns defy.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from wyoming_chorus.frontend.normalize import lang_cjk, lang_de, lang_en, lang_es, lang_fr, lang_it, lang_pt, lang_ru
from wyoming_chorus.frontend.normalize.rules import Rules
from wyoming_chorus.frontend.normalize.speller import Speller
from wyoming_chorus.frontend.normalize.words import LONGEST

__all__ = ["LONGEST", "RULES", "normalize", "rules_language"]

RULES: Mapping[str, Rules] = {
    "en": lang_en.RULES, "de": lang_de.RULES, "fr": lang_fr.RULES, "es": lang_es.RULES, "it": lang_it.RULES,
    "pt": lang_pt.RULES, "pt_br": lang_pt.BRAZIL, "ru": lang_ru.RULES,
    "zh": lang_cjk.CHINESE, "ja": lang_cjk.JAPANESE, "ko": lang_cjk.KOREAN,
}
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def normalize(text: str, language: str | None) -> str:
    """`text` with its numbers and symbols in words; `language` is a code ("en", "de_DE", "nl") or None / "auto".
    Text in a language with no rules here comes back as written."""
    key = rules_language(language, text)
    return text if key is None else _speller(key).spell(text)


def rules_language(language: str | None, text: str = "") -> str | None:
    """The key of RULES that text in `language` is read with (for "auto", told from the script of `text`), or None
    for a language with none (Dutch, Polish: the model's languages only)."""
    code = (language or "auto").lower().replace("-", "_")
    if code in RULES:
        return code
    primary = code.split("_")[0]
    if primary in RULES:
        return primary
    if primary == "auto":
        return "ja" if _KANA.search(text) else "ko" if _HANGUL.search(text) else "zh" if _HAN.search(text) else "en"
    return None


@functools.cache
def _speller(key: str) -> Speller:
    return Speller(RULES[key])
