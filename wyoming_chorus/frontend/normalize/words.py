"""Number words of one language: a number (signed, grouped, with decimals) and the noun it counts, agreeing with each
other. The passes that find numbers in text are speller.py and calendar.py; they all say numbers through this.

Never raises: a number longer than num2words can say in the language is read digit by digit, and any error num2words
raises within LONGEST (a bug of its own) gives the digits back rather than no reply.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Noun, Rules

# The most digits num2words (0.5.14) says every number of, by language: (cardinal and year, ordinal). With one digit
# more it raises, for some numbers or all: OverflowError (en, de, fr, es, pt, pt_BR), NotImplementedError (it),
# KeyError (ru, pt ordinals), RecursionError (es ordinals). tests/frontend/test_normalize.py checks both sides against
# the installed num2words.
LONGEST: Mapping[str, tuple[int, int]] = {
    "en": (306, 306), "de": (606, 606), "fr": (606, 606), "es": (27, 14), "it": (65, 65), "pt": (27, 18),
    "pt_BR": (18, 18), "ru": (33, 33),
}
# What num2words raises for a number it has no words for. Caught around each call, as a last guard behind LONGEST.
_UNSAYABLE = (ArithmeticError, ValueError, NotImplementedError, KeyError)
_WORD_BEFORE = re.compile(r"(?<!\w)(\w+)\s*\Z")  # not from inside a word: each start would rescan the word


def word_before(m: re.Match) -> str:
    """The word right before a match, lower-cased ("" for none), looked for only in the last characters: a search
    over the whole text before each match would be quadratic. A word that starts further back (a long one, or one
    before many spaces) counts as none."""
    before = _WORD_BEFORE.search(m.string, max(0, m.start() - 64), m.start())
    return before[1].lower() if before else ""


def text_after(m: re.Match) -> str:
    """What follows a match, as far as a language's context rules look (a word or two)."""
    return m.string[m.end():m.end() + 64]


class NumberWords:
    def __init__(self, rules: Rules):
        self.rules = r = rules
        self._digit_words = [] if r.digits_stay else [self.cardinal(d) for d in range(10)]  # 10 calls, not n

    def says(self, digits: str, to: str = "cardinal") -> bool:
        """Whether num2words has words for a number this long (and int() takes it: 4300 digits and more it refuses)."""
        return len(digits) <= LONGEST[self.rules.lang][to == "ordinal"]

    @staticmethod
    def safe(words: Callable[[], str], fallback: str) -> str:
        try:
            return words().replace(",", "")  # written commas, not spoken pauses
        except _UNSAYABLE:  # within LONGEST this is a num2words bug: the digits are better than no reply
            return fallback

    def cardinal(self, number: int, gender: str = "", case: str = "") -> str:
        r = self.rules
        cardinal = r.cardinal
        return self.safe((lambda: cardinal(number, gender, case)) if cardinal else
                         (lambda: num2words(number, lang=r.lang)), str(number))

    def ordinal(self, number: int, tag: str) -> str:
        r = self.rules
        ordinal = r.ordinal
        return self.safe((lambda: ordinal(number, tag)) if ordinal else
                         (lambda: num2words(number, lang=r.lang, to="ordinal")), str(number))

    def digits(self, digits: str) -> str:
        return " ".join(self._digit_words[int(d)] for d in digits)

    def plain(self, whole: str) -> str:
        return whole.replace(self.rules.group, "") if self.rules.group else whole

    def number(self, sign: str | None, whole: str, frac: str | None, gender: str = "", case: str = "",
               minus: str | None = None) -> str:
        r = self.rules
        if r.digits_stay:
            words = whole + ("" if frac is None else "." + frac)
        else:
            whole = self.plain(whole)
            if (whole.startswith("0") and len(whole) > 2) or len(whole) > 9:  # codes, phone numbers; not "05"
                words = self.digits(whole) + ("" if frac is None else f" {r.point} {self.digits(frac)}")
            elif frac is not None and r.decimal_words is not None and len(frac) <= 6:
                decimal_words = r.decimal_words
                words = self.safe(lambda: decimal_words(whole, frac),
                                  f"{self.cardinal(int(whole))} {r.point} {self.digits(frac)}")
            else:
                words = self.cardinal(int(whole), "" if frac else gender, case)
                if frac is not None:
                    words += f" {r.point} {self._fraction(frac)}"
        return (r.minus if minus is None else minus) + words if sign else words

    def _fraction(self, frac: str) -> str:
        """Digit by digit, as written (num2words' own decimals drop digits: "3.50", and all of Italian); or where
        the language says it so, as a number after its leading zeros ("coma cero cinco", "virgule vingt-cinq")."""
        rest = frac.lstrip("0")
        if self.rules.fraction_as_number and rest and len(rest) <= 3:
            return " ".join([self._digit_words[0]] * (len(frac) - len(rest)) + [self.cardinal(int(rest))])
        return self.digits(frac)

    def with_noun(self, noun: Noun, number: str, digits: str, fraction: bool, case: str = "") -> str:
        size = int(digits[-6:]) + (1_000_000 if digits[:-6].strip("0") else 0)  # all the grammar looks at
        form = noun.forms[min(self.rules.form(size, fraction, case), len(noun.forms) - 1)]
        return form.replace("{n}", number) if "{n}" in form else f"{number} {form}"

    def amount(self, noun: Noun, sign: str | None, whole: str, frac: str | None, case: str = "") -> str:
        """A number and the noun it counts, agreeing with each other."""
        digits = self.plain(whole)
        if noun.one is not None and digits == "1" and frac is None:
            return ((self.rules.minus if noun.minus is None else noun.minus) + noun.one) if sign else noun.one
        number = self.number(sign, whole, frac, noun.gender, case, noun.minus)
        return self.with_noun(noun, number, digits, frac is not None, case)

    def count(self, noun: Noun, number: int, case: str = "") -> str:
        """A whole amount in words, however many digits (the dollars of "$1234567890"), and the noun it counts."""
        if noun.one is not None and number == 1:
            return noun.one
        return self.with_noun(noun, self.cardinal(number, noun.gender, case), str(number), False, case)
