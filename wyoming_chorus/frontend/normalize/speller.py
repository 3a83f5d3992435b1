"""The engine: one language's Rules compiled into regular expressions, applied from the most specific to the least
(dates, times, money, quantities with units, ordinals, then plain numbers).

Never raises: a number longer than num2words can say in the language is read digit by digit (money, quantities) or
left to the plain-number rule (ordinals), and every pattern runs in time linear in the text (no start inside a word or
a digit group can rescan what an earlier start already failed on), so that no text breaks a reply off mid-way.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import ALIASES, CURRENCY_CODES, Noun, Rules

# The most digits num2words (0.5.14) says every number of, by language: (cardinal and year, ordinal). With one digit
# more it raises, for some numbers or all: OverflowError (en, de, fr, es, pt, pt_BR), NotImplementedError (it),
# KeyError (ru, pt ordinals), RecursionError (es ordinals). tests/test_normalize.py checks both sides against the
# installed num2words.
LONGEST: Mapping[str, tuple[int, int]] = {
    "en": (306, 306), "de": (606, 606), "fr": (606, 606), "es": (27, 14), "it": (65, 65), "pt": (27, 18),
    "pt_BR": (18, 18), "ru": (33, 33),
}
# What num2words raises for a number it has no words for. Caught around each call, as a last guard behind LONGEST.
_UNSAYABLE = (ArithmeticError, ValueError, NotImplementedError, KeyError)
_WORD_BEFORE = re.compile(r"(?<!\w)(\w+)\s*\Z")  # not from inside a word: each start would rescan the word
_ONLY_SPACE = re.compile(r"\s*\Z")


class Speller:
    def __init__(self, rules: Rules):
        self.rules = r = rules
        self._digit_words = [] if r.digits_stay else [self._cardinal(d) for d in range(10)]  # 10 calls, not n
        self._units = {**{alias: r.units[unit] for alias, unit in ALIASES.items() if unit in r.units}, **r.units}
        # The nouns written out ("1 Stunde", "21 minutos"): the number agrees with them, the word stays as written.
        self._words = {form: noun for noun in [*r.units.values(), *([r.hour] if r.hour else [])]
                       for form in noun.forms if "{n}" not in form and form not in self._units}
        self._months = {name.casefold(): i for i, name in enumerate(r.months)}
        # A group chain never starts right after a digit and a separator: a chain that failed to match from its first
        # group is not retried from each later one (quadratic in "1,111,111,...").
        g = re.escape(r.group)
        group = rf"(?<!\d{g})[1-9]\d{{0,2}}(?:{g}\d{{3}})+(?!\d)|" if r.group else ""
        # Not after a letter: "MP3" and "H2O" are names, not numbers. "@" stands for a group-name suffix. CJK text
        # writes numbers right after its own letters ("最低-3"): there, only Latin letters make a name.
        letter, word = (r"[A-Za-z]", r"A-Za-z0-9_") if r.digits_stay else (r"[^\W\d_]", r"\w")
        digits = rf"(?P<int@>{group}\d+)(?:{r.decimal}(?P<frac@>\d+))?"
        number = rf"(?<!{letter})(?<!\d){digits}"
        signed = rf"(?P<sign@>(?<![{word}.,)])[-−])?" + number
        end = rf"(?![{word}])"  # a unit's or a currency's end
        symbols = "|".join(re.escape(u) for u in sorted(self._units, key=len, reverse=True))
        units = "|".join(re.escape(u) for u in sorted([*self._units, *self._words], key=len, reverse=True))
        self.passes: list[tuple[re.Pattern, Callable[[re.Match], str]]] = []

        def add(pattern: str, replace: Callable[[re.Match], str]) -> None:
            self.passes.append((re.compile(pattern), replace))

        if r.months:
            add(r"(?<![\d.\-/])(?P<y>\d{4})(?P<s>[-/])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})(?![\d\-/])", self._date)
            year = r"(?P<y>\d{4})" + ("?" if r.day_case else "")  # "am 29.11." needs no year in German
            add(rf"(?<![\d.])(?P<d>\d{{1,2}})\.(?P<m>\d{{1,2}})\.{year}(?!\d)", self._date)
            if r.slash_dates:
                add(r"(?<![\d/.])(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})(?![\d/])", self._date)
            if not r.digits_stay:
                names = "(?i:" + "|".join(re.escape(name) for name in r.months) + ")"
                year_after = r"(?:,?\s(?:de\s)?(?P<y>\d{4})(?!\d))?"
                if r.date.startswith("{month}"):  # "May 3rd, 2026"
                    add(rf"(?<!\w)(?P<mn>{names})\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?!\w){year_after}", self._date)
                else:  # "3. Mai", "1er mai", "3 de mayo", "1° maggio", "3 мая"
                    add(rf"(?<![\d.,])(?P<d>\d{{1,2}})(?:\.|er|º|°)?\s(?:de\s)?(?P<mn>{names})(?!\w){year_after}",
                        self._date)
        if r.clock[0]:
            ampm = r"\s?(?P<ap@>[aApP])\.?\s?[mM](?![a-zA-Z])"
            suffix = (f"(?:{ampm.replace('@', '')})?" if r.am_pm
                      else rf"(?:\s?(?:{r.clock_suffix})(?!\w))?" if r.clock_suffix else "")
            separator = r"(?::|\s?h\s?)" if r.clock_h else ":"
            time = rf"(?<![\d:.,])(?P<h>[01]?\d|2[0-4]){separator}(?P<min>[0-5]\d)(?![\d:]){suffix}"
            if r.am_pm:  # "7 pm"
                time += rf"|(?<![\d:.,])(?P<h2>1[0-2]|0?[1-9]){ampm.replace('@', '2')}"
            add(time, self._time)
        if r.money:
            money = "|".join(re.escape(s) for s in [*r.money, *(c for c, s in CURRENCY_CODES.items() if s in r.money)])
            per = rf"(?:/(?P<per@>{symbols}){end})?" if r.per else ""
            add(rf"(?P<cur>{money})\s?(?<!\d){digits.replace('@', '')}{per.replace('@', '')}"  # "CHF5" too
                rf"|{signed.replace('@', '2')}\s?(?P<cur2>{money}){end}{per.replace('@', '2')}", self._money)
        start = rf"(?:{signed.replace('@', '0')}\s?[-–]\s?)?" if r.range else ""
        add(rf"{start}{signed.replace('@', '')}\s?(?P<unit>{units}){end}", self._quantity)
        if r.ordinals:
            suffixes = "|".join(re.escape(s) for s in sorted(r.ordinals, key=len, reverse=True))
            add(rf"(?<![\w.,])(?P<n>\d+)(?P<suffix>{suffixes})(?!\w)", self._ordinal)
        if not r.digits_stay:
            # Tokens with a letter ("v1.2", "MP3") are names: matched whole, so that none of their digits is read.
            # Only from a word's start, and possessively: each word is scanned once, not once from each of its letters.
            add(r"(?P<name>(?<!\w)[\d_]*+[^\W\d_]\w*+(?:[.,]\d+)+)|" + signed.replace("@", ""), self._plain_number)

    def spell(self, text: str) -> str:
        text = text.replace("\u00a0", " ").replace("\u202f", " ")  # no-break spaces around units and groups
        for pattern, replace in self.passes:
            text = pattern.sub(replace, text)
        return re.sub(r"[ \t]{2,}", " ", text)

    # ---- words -------------------------------------------------------------------------------------------------
    def _says(self, digits: str, to: str = "cardinal") -> bool:
        """Whether num2words has words for a number this long (and int() takes it: 4300 digits and more it refuses)."""
        return len(digits) <= LONGEST[self.rules.lang][to == "ordinal"]

    @staticmethod
    def _safe(words: Callable[[], str], fallback: str) -> str:
        try:
            return words().replace(",", "")  # written commas, not spoken pauses
        except _UNSAYABLE:  # within LONGEST this is a num2words bug: the digits are better than no reply
            return fallback

    def _cardinal(self, number: int, gender: str = "", case: str = "") -> str:
        r = self.rules
        cardinal = r.cardinal
        return self._safe((lambda: cardinal(number, gender, case)) if cardinal else
                          (lambda: num2words(number, lang=r.lang)), str(number))

    def _digits(self, digits: str) -> str:
        return " ".join(self._digit_words[int(d)] for d in digits)

    def _plain(self, whole: str) -> str:
        return whole.replace(self.rules.group, "") if self.rules.group else whole

    def _number(self, sign: str | None, whole: str, frac: str | None, gender: str = "", case: str = "",
                minus: str | None = None) -> str:
        r = self.rules
        if r.digits_stay:
            words = whole + ("" if frac is None else "." + frac)
        else:
            whole = self._plain(whole)
            if (whole.startswith("0") and len(whole) > 2) or len(whole) > 9:  # codes, phone numbers; not "05"
                words = self._digits(whole) + ("" if frac is None else f" {r.point} {self._digits(frac)}")
            elif frac is not None and r.decimal_words is not None and len(frac) <= 6:
                decimal_words = r.decimal_words
                words = self._safe(lambda: decimal_words(whole, frac),
                                   f"{self._cardinal(int(whole))} {r.point} {self._digits(frac)}")
            else:
                words = self._cardinal(int(whole), "" if frac else gender, case)
                if frac is not None:
                    words += f" {r.point} {self._fraction(frac)}"
        return (r.minus if minus is None else minus) + words if sign else words

    def _fraction(self, frac: str) -> str:
        """Digit by digit, as written (num2words' own decimals drop digits: "3.50", and all of Italian); or where
        the language says it so, as a number after its leading zeros ("coma cero cinco", "virgule vingt-cinq")."""
        rest = frac.lstrip("0")
        if self.rules.fraction_as_number and rest and len(rest) <= 3:
            return " ".join([self._digit_words[0]] * (len(frac) - len(rest)) + [self._cardinal(int(rest))])
        return self._digits(frac)

    def _with_noun(self, noun: Noun, number: str, digits: str, fraction: bool, case: str = "") -> str:
        size = int(digits[-6:]) + (1_000_000 if digits[:-6].strip("0") else 0)  # all the grammar looks at
        form = noun.forms[min(self.rules.form(size, fraction, case), len(noun.forms) - 1)]
        return form.replace("{n}", number) if "{n}" in form else f"{number} {form}"

    def _amount(self, noun: Noun, sign: str | None, whole: str, frac: str | None, case: str = "") -> str:
        """A number and the noun it counts, agreeing with each other."""
        digits = self._plain(whole)
        if noun.one is not None and digits == "1" and frac is None:
            return ((self.rules.minus if noun.minus is None else noun.minus) + noun.one) if sign else noun.one
        number = self._number(sign, whole, frac, noun.gender, case, noun.minus)
        return self._with_noun(noun, number, digits, frac is not None, case)

    def _count(self, noun: Noun, number: int) -> str:
        """A whole amount in words, however many digits (the dollars of "$1234567890"), and the noun it counts."""
        if noun.one is not None and number == 1:
            return noun.one
        return self._with_noun(noun, self._cardinal(number, noun.gender), str(number), False)

    # ---- the passes ----------------------------------------------------------------------------------------------
    def _plain_number(self, m: re.Match) -> str:
        if m["name"]:
            return m["name"]
        gender = ""
        if self.rules.gender_after:  # "a las 21": hours, "veintiuna"
            before = _WORD_BEFORE.search(m.string, max(0, m.start() - 64), m.start())
            gender = self.rules.gender_after.get(before[1].lower(), "") if before else ""
        words = self._number(m["sign"], m["int"], m["frac"], gender)
        glued = m.end() < len(m.string) and m.string[m.end()].isalpha()
        return words + " " if glued else words  # "3D" -> "three D"

    def _quantity(self, m: re.Match) -> str:
        r = self.rules
        word = m["unit"] if m["unit"] in self._words else None
        noun = self._words[word] if word else self._units[m["unit"]]
        if word:  # only the number changes: the writer chose the word's form (and case)
            noun = Noun((word,), noun.gender, noun.one if word == noun.forms[0] else None, noun.minus)
        if m.groupdict().get("int0") is None:
            return self._amount(noun, m["sign"], m["int"], m["frac"])
        fractional = m["frac0"] is not None or m["frac"] is not None
        template, case = (r.range_fraction, "") if fractional and r.range_fraction else (r.range, r.range_case)
        low = self._number(m["sign0"], m["int0"], m["frac0"], noun.gender, case, noun.minus)
        high = self._number(m["sign"], m["int"], m["frac"], noun.gender, case, noun.minus)
        return self._with_noun(noun, template.format(low=low, high=high), self._plain(m["int"]), m["frac"] is not None,
                               case)

    def _money(self, m: re.Match) -> str:
        r = self.rules
        symbol = m["cur"] or m["cur2"]
        major, minor = r.money[CURRENCY_CODES.get(symbol, symbol)]
        first = m["cur"] is not None
        sign, whole, frac = (None, m["int"], m["frac"]) if first else (m["sign2"], m["int2"], m["frac2"])
        digits = self._plain(whole)
        # Not cents ("3.505 €" is a measured amount), or more than words can say: as a quantity, digit by digit.
        if r.digits_stay or (frac is not None and len(frac) > 2) or not self._says(digits):
            text = self._amount(major, sign, whole, frac)
        else:
            cents = int((frac or "0").ljust(2, "0"))
            parts = [self._count(major, int(digits))] if int(digits) or not cents else []
            if cents:
                parts.append(self._count(minor, cents))
            text = (r.minus if sign else "") + r.conjunction.join(parts)
        per = m.groupdict().get("per" if first else "per2")
        return f"{text} {r.per} {self._units[per].forms[0]}" if per else text

    def _ordinal(self, m: re.Match) -> str:
        r = self.rules
        if not self._says(m["n"], "ordinal"):
            return m[0]  # the plain-number rule reads its digits one by one ("nine nine ... th")
        number, tag, ordinal = int(m["n"]), r.ordinals[m["suffix"]], r.ordinal
        return self._safe((lambda: ordinal(number, tag)) if ordinal else
                          (lambda: num2words(number, lang=r.lang, to="ordinal")), m[0])

    def _date(self, m: re.Match) -> str:
        r = self.rules
        found = m.groupdict()
        named = found.get("mn")
        day, month = int(m["d"]), (self._months[named.casefold()] + 1 if named else int(m["m"]))
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return m[0]
        # The word before it, looked for only in the last characters: a search over the whole text before each date
        # would be quadratic. A word that starts further back (a long one, or one before many spaces) counts as none.
        before = _WORD_BEFORE.search(m.string, max(0, m.start() - 64), m.start())
        case = r.day_case.get(before[1].lower()) if before else None
        if case is None and not m["y"] and not named:
            return m[0]
        if r.digits_stay:
            day_words, year = str(day), m["y"]
        else:
            day_case, day_hook = (r.day_default if case is None else case), r.day
            day_words = self._safe((lambda: day_hook(day, day_case)) if day_hook else
                                   (lambda: num2words(day, lang=r.lang, to="ordinal")), str(day))
            year_words = r.year_words
            year = m["y"] and self._safe((lambda: year_words(int(m["y"]))) if year_words else
                                         (lambda: num2words(int(m["y"]), lang=r.lang, to="year")), m["y"])
        text = r.date.format(day=day_words, month=r.months[month - 1], year=r.year.format(year=year) if year else "")
        if m["y"] or named:
            return text
        return text + "." if _ONLY_SPACE.match(m.string, m.end()) else text  # the date's dot also ended the sentence

    def _time(self, m: re.Match) -> str:
        r = self.rules
        found = m.groupdict()
        if found["h"] is not None:
            hour, minute, ap = int(found["h"]), int(found["min"]), found.get("ap")
        else:
            hour, minute, ap = int(found["h2"]), 0, found["ap2"]
        if r.digits_stay:
            hour_words, minute_words = str(hour), str(minute)
        else:
            hour_words = r.hour_words.get(hour) or self._cardinal(hour, r.hour_gender)
            minute_words = self._cardinal(minute, r.minute_gender)
        hours = self._amount(r.hour, None, str(hour), None) if r.hour else hour_words
        if minute == 0:
            text = hour_words if ap else r.clock[0].format(hour=hour_words, hours=hours)
        else:
            text = r.clock[1 if minute >= 10 else 2].format(hour=hour_words, hours=hours, minute=minute_words)
        return f"{text} {ap.upper()}M" if ap else text
