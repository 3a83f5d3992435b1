"""Spoken words for what home-automation announcements are full of: numbers, decimals, signs, times, dates, units,
percentages and money, in the language of the request. Runs before tokenisation.

Why: the model reads "21.5 °C", "07:30" or "1,234" by guesswork (is the comma a decimal mark? is "m" metres or
minutes? which language are the digits in?). Spelling them out takes the guess away. num2words gives the number
words of each language; the tables below give everything around them.

Coverage: English and German have full tables. French, Spanish, Italian, Portuguese and Russian get numbers and
(except Russian, whose noun would need case agreement) percent. Chinese, Japanese and Korean text is left as it is:
the model reads digits inside CJK text natively, and the spoken form there depends on counters (Japanese 三百 is
"sanbyaku", Korean switches between native and Sino-Korean numbers) that a table cannot get right; num2words has no
Chinese at all. Language "auto" applies the English rules to text without CJK characters and leaves CJK text alone.
Not handled: slash dates (11/29 or 29/11 is ambiguous), seconds in times, German ordinals outside dates ("3." ends
sentences too often), plain ranges without a unit ("5-10").

Never raises: a number longer than num2words can say in the language is read digit by digit (money, quantities) or
left to the plain-number rule (ordinals), and every pattern runs in time linear in the text (no start inside a word or
a digit group can rescan what an earlier start already failed on), so that no text breaks a reply off mid-way.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from num2words import num2words


@dataclass(frozen=True)
class Rules:
    lang: str                                   # num2words' language
    point: str                                  # said between the integer and the fractional digits
    group: str                                  # thousands separator ("1,234"); "" when digits are never grouped
    decimal: str                                # decimal marks, as a regex class
    minus: str
    units: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # symbol -> (exactly one, plural noun)
    money: Mapping[str, tuple[str, str, str, str]] = field(default_factory=dict)  # one major, majors, one minor, minors
    conjunction: str = ""                       # between money's major and minor parts
    through: str = ""                           # a range with a unit: "20-25 °C"
    months: tuple[str, ...] = ()                # empty: dates are left alone
    date: tuple[str, str] = ("", "")            # day and month, then the year part
    # Word before a date -> ending of its day's ordinal. Only after these words is "29.11." (no year) a date: after
    # anything else it is as likely a number ending a sentence ("Es sind 21.5.").
    day_case: Mapping[str, str] = field(default_factory=dict)
    clock: tuple[str, str, str] = ("", "", "")  # full hour, HH:MM, HH:0M; empty: times are left alone
    hour_words: Mapping[int, str] = field(default_factory=dict)  # hours said unlike the plain number
    am_pm: bool = False                         # "7 pm", "12:05 p.m."
    ordinal: str = ""                           # suffixes of numeric ordinals, as a regex ("st|nd|rd|th")


_EN_UNITS = {
    "°C": ("one degree Celsius", "degrees Celsius"), "℃": ("one degree Celsius", "degrees Celsius"),
    "°F": ("one degree Fahrenheit", "degrees Fahrenheit"), "℉": ("one degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("one degree", "degrees"), "%": ("one percent", "percent"), "K": ("one kelvin", "kelvins"),
    "km/h": ("one kilometre per hour", "kilometres per hour"), "m/s": ("one metre per second", "metres per second"),
    "mph": ("one mile per hour", "miles per hour"), "km": ("one kilometre", "kilometres"),
    "m": ("one metre", "metres"), "cm": ("one centimetre", "centimetres"), "mm": ("one millimetre", "millimetres"),
    "m²": ("one square metre", "square metres"), "m³": ("one cubic metre", "cubic metres"),
    "kg": ("one kilogram", "kilograms"), "g": ("one gram", "grams"), "l": ("one litre", "litres"),
    "L": ("one litre", "litres"), "ml": ("one millilitre", "millilitres"),
    "kWh": ("one kilowatt hour", "kilowatt hours"), "Wh": ("one watt hour", "watt hours"),
    "kW": ("one kilowatt", "kilowatts"), "W": ("one watt", "watts"), "V": ("one volt", "volts"),
    "A": ("one amp", "amps"), "mA": ("one milliamp", "milliamps"), "Hz": ("one hertz", "hertz"),
    "h": ("one hour", "hours"), "min": ("one minute", "minutes"), "s": ("one second", "seconds"),
    "ms": ("one millisecond", "milliseconds"), "hPa": ("one hectopascal", "hectopascals"),
    "mbar": ("one millibar", "millibars"), "lx": ("one lux", "lux"), "dB": ("one decibel", "decibels"),
    "ppm": ("one part per million", "parts per million"),
    "µg/m³": ("one microgram per cubic metre", "micrograms per cubic metre"),
    "GB": ("one gigabyte", "gigabytes"), "MB": ("one megabyte", "megabytes"),
    "Mbit/s": ("one megabit per second", "megabits per second"),
}
_DE_UNITS = {
    "°C": ("ein Grad Celsius", "Grad Celsius"), "℃": ("ein Grad Celsius", "Grad Celsius"),
    "°F": ("ein Grad Fahrenheit", "Grad Fahrenheit"), "°": ("ein Grad", "Grad"), "%": ("ein Prozent", "Prozent"),
    "K": ("ein Kelvin", "Kelvin"), "km/h": ("ein Kilometer pro Stunde", "Kilometer pro Stunde"),
    "m/s": ("ein Meter pro Sekunde", "Meter pro Sekunde"), "km": ("ein Kilometer", "Kilometer"),
    "m": ("ein Meter", "Meter"), "cm": ("ein Zentimeter", "Zentimeter"), "mm": ("ein Millimeter", "Millimeter"),
    "m²": ("ein Quadratmeter", "Quadratmeter"), "m³": ("ein Kubikmeter", "Kubikmeter"),
    "kg": ("ein Kilogramm", "Kilogramm"), "g": ("ein Gramm", "Gramm"), "l": ("ein Liter", "Liter"),
    "L": ("ein Liter", "Liter"), "ml": ("ein Milliliter", "Milliliter"),
    "kWh": ("eine Kilowattstunde", "Kilowattstunden"), "Wh": ("eine Wattstunde", "Wattstunden"),
    "kW": ("ein Kilowatt", "Kilowatt"), "W": ("ein Watt", "Watt"), "V": ("ein Volt", "Volt"),
    "A": ("ein Ampere", "Ampere"), "mA": ("ein Milliampere", "Milliampere"), "Hz": ("ein Hertz", "Hertz"),
    "h": ("eine Stunde", "Stunden"), "Std.": ("eine Stunde", "Stunden"), "min": ("eine Minute", "Minuten"),
    "Min.": ("eine Minute", "Minuten"), "s": ("eine Sekunde", "Sekunden"), "ms": ("eine Millisekunde", "Millisekunden"),
    "hPa": ("ein Hektopascal", "Hektopascal"), "mbar": ("ein Millibar", "Millibar"), "lx": ("ein Lux", "Lux"),
    "dB": ("ein Dezibel", "Dezibel"), "ppm": ("ein Teil pro Million", "Teile pro Million"),
    "µg/m³": ("ein Mikrogramm pro Kubikmeter", "Mikrogramm pro Kubikmeter"),
    "GB": ("ein Gigabyte", "Gigabyte"), "MB": ("ein Megabyte", "Megabyte"),
    "Mbit/s": ("ein Megabit pro Sekunde", "Megabit pro Sekunde"),
    "Uhr": ("ein Uhr", "Uhr"),  # "1 Uhr" is "ein Uhr", not "eins Uhr"
}

RULES: Mapping[str, Rules] = {
    "en": Rules(
        "en", "point", ",", "[.]", "minus", _EN_UNITS,
        money={"€": ("one euro", "euros", "one cent", "cents"), "$": ("one dollar", "dollars", "one cent", "cents"),
               "£": ("one pound", "pounds", "one penny", "pence")},
        conjunction=" and ", through="to",
        months=("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December"),
        date=("{month} {day}", ", {year}"),
        clock=("{hour} o'clock", "{hour} {minute}", "{hour} oh {minute}"), hour_words={0: "twelve"},
        am_pm=True, ordinal="st|nd|rd|th",
    ),
    "de": Rules(
        # "." also marks decimals where it cannot be a thousands separator: sensor states read "21.5" in any locale.
        "de", "Komma", ".", "[,.]", "minus", _DE_UNITS,
        money={"€": ("ein Euro", "Euro", "ein Cent", "Cent"), "$": ("ein Dollar", "Dollar", "ein Cent", "Cent"),
               "£": ("ein Pfund", "Pfund", "ein Penny", "Pence")},
        conjunction=" und ", through="bis",
        months=("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
                "November", "Dezember"),
        date=("{day} {month}", " {year}"),
        day_case={"am": "n", "vom": "n", "zum": "n", "dem": "n", "den": "n", "der": ""},  # "am neunundzwanzigsten"
        clock=("{hour} Uhr", "{hour} Uhr {minute}", "{hour} Uhr {minute}"), hour_words={1: "ein"},
    ),
    "fr": Rules("fr", "virgule", " ", "[,.]", "moins", {"%": ("un pour cent", "pour cent")}),
    "es": Rules("es", "coma", ".", "[,.]", "menos", {"%": ("uno por ciento", "por ciento")}),
    "it": Rules("it", "virgola", ".", "[,.]", "meno", {"%": ("uno per cento", "per cento")}),
    "pt": Rules("pt", "vírgula", ".", "[,.]", "menos", {"%": ("um por cento", "por cento")}),
    "ru": Rules("ru", "запятая", " ", "[,.]", "минус"),
}
# The most digits num2words (0.5.14) says every number of, by language: (cardinal and year, ordinal). With one digit
# more it raises, for some numbers or all: OverflowError (en, de, fr, es, pt), NotImplementedError (it), KeyError (ru,
# pt ordinals), RecursionError (es ordinals). tests/test_normalize.py checks both sides against the installed num2words.
LONGEST: Mapping[str, tuple[int, int]] = {
    "en": (306, 306), "de": (606, 606), "fr": (606, 606), "es": (27, 14), "it": (65, 65), "pt": (27, 18),
    "ru": (33, 33),
}
# What num2words raises for a number it has no words for. Caught around each call, as a last guard behind LONGEST.
_UNSAYABLE = (ArithmeticError, ValueError, NotImplementedError, KeyError)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CURRENCY_CODES = {"EUR": "€", "USD": "$", "GBP": "£"}
_WORD_BEFORE = re.compile(r"(?<!\w)(\w+)\s*\Z")  # not from inside a word: each start would rescan the word
_ONLY_SPACE = re.compile(r"\s*\Z")


def normalize(text: str, language: str | None) -> str:
    """`text` with its numbers and symbols in words; `language` is a code ("en", "de_DE") or None / "auto"."""
    code = (language or "auto").lower().replace("-", "_").split("_")[0]
    if code == "auto":
        if _CJK.search(text):
            return text
        code = "en"
    return _speller(code).spell(text) if code in RULES else text


@functools.cache
def _speller(code: str) -> _Speller:
    return _Speller(RULES[code])


class _Speller:
    """One language's rules compiled into regular expressions, applied from the most specific to the least."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self._digit_words = [self._words(d) for d in range(10)]  # a long number read digit by digit: 10 calls, not n
        r = rules
        # A group chain never starts right after a digit and a separator: a chain that failed to match from its first
        # group is not retried from each later one (quadratic in "1,111,111,...").
        g = re.escape(r.group)
        group = rf"(?<!\d{g})[1-9]\d{{0,2}}(?:{g}\d{{3}})+(?!\d)|" if r.group else ""
        # Not after a letter: "MP3" and "H2O" are names, not numbers. "@" stands for a group-name suffix.
        number = rf"(?<![^\W\d_])(?<!\d)(?P<int@>{group}\d+)(?:{r.decimal}(?P<frac@>\d+))?"
        signed = r"(?P<sign@>(?<![\w.,)])[-−])?" + number
        self.passes: list[tuple[re.Pattern, Callable[[re.Match], str]]] = []
        if r.months:
            self.passes.append((re.compile(r"(?<![\d.-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?![\d-])"),
                                self._date))
            year = r"(?P<y>\d{4})" + ("?" if r.day_case else "")  # "am 29.11." needs no year in German
            self.passes.append((re.compile(rf"(?<![\d.])(?P<d>\d{{1,2}})\.(?P<m>\d{{1,2}})\.{year}(?!\d)"),
                                self._date))
        if r.clock[0]:
            ampm = r"\s?(?P<ap@>[aApP])\.?\s?[mM](?![a-zA-Z])"
            suffix = f"(?:{ampm.replace('@', '')})?" if r.am_pm else r"(?:\s?Uhr(?!\w))?"
            time = rf"(?<![\d:.,])(?P<h>[01]?\d|2[0-4]):(?P<min>[0-5]\d)(?![\d:]){suffix}"
            if r.am_pm:  # "7 pm"
                time += rf"|(?<![\d:.,])(?P<h2>1[0-2]|0?[1-9]){ampm.replace('@', '2')}"
            self.passes.append((re.compile(time), self._time))
        if r.money:
            symbols = "|".join(re.escape(s) for s in [*r.money, *_CURRENCY_CODES])
            self.passes.append((re.compile(rf"(?P<cur>{symbols})\s?{number.replace('@', '')}"
                                           rf"|{number.replace('@', '2')}\s?(?P<cur2>{symbols})(?!\w)"),
                                self._money))
        if r.units:
            units = "|".join(re.escape(u) for u in sorted(r.units, key=len, reverse=True))
            start = rf"(?:{signed.replace('@', '0')}\s?[-–]\s?)?" if r.through else ""
            self.passes.append((re.compile(rf"{start}{signed.replace('@', '')}\s?(?P<unit>{units})(?!\w)"),
                                self._quantity))
        if r.ordinal:
            self.passes.append((re.compile(rf"(?<![\w.,])(?P<n>\d+)(?:{r.ordinal})(?!\w)"), self._ordinal))
        # Tokens with a letter ("v1.2", "MP3") are names: matched whole, so that none of their digits is read. Only
        # from a word's start, and possessively: each word is scanned once, not once from each of its letters.
        self.passes.append((re.compile(r"(?P<name>(?<!\w)[\d_]*+[^\W\d_]\w*+(?:[.,]\d+)+)|" + signed.replace("@", "")),
                            self._number))

    def spell(self, text: str) -> str:
        text = text.replace("\u00a0", " ").replace("\u202f", " ")  # no-break spaces around units and groups
        for pattern, replace in self.passes:
            text = pattern.sub(replace, text)
        return re.sub(r"[ \t]{2,}", " ", text)

    # ---- the pieces ------------------------------------------------------------------------------------------
    def _says(self, digits: str, to: str = "cardinal") -> bool:
        """Whether num2words has words for a number this long (and int() takes it: 4300 digits and more it refuses)."""
        return len(digits) <= LONGEST[self.rules.lang][to == "ordinal"]

    def _words(self, n: int, to: str = "cardinal") -> str:
        try:
            words = num2words(n, lang=self.rules.lang, to=to)
        except _UNSAYABLE:  # within LONGEST this is a num2words bug: the digits are better than no reply
            return str(n)
        return words.replace(",", "")  # written commas, not spoken pauses

    def _digits(self, digits: str) -> str:
        return " ".join(self._digit_words[int(d)] for d in digits)

    def _spell(self, sign: str | None, whole: str, frac: str | None) -> str:
        whole = whole.replace(self.rules.group, "") if self.rules.group else whole
        if (whole.startswith("0") and len(whole) > 1) or len(whole) > 9:  # codes and phone numbers: digit by digit
            words = self._digits(whole)
        else:
            words = self._words(int(whole))
        if frac:
            # Digit by digit, as written: num2words' own decimals drop digits ("3.50", and all of Italian).
            words += f" {self.rules.point} " + self._digits(frac)
        return f"{self.rules.minus} {words}" if sign else words

    def _number(self, m: re.Match) -> str:
        if m["name"]:
            return m["name"]
        words = self._spell(m["sign"], m["int"], m["frac"])
        glued = m.end() < len(m.string) and m.string[m.end()].isalpha()
        return words + " " if glued else words  # "3D" -> "three D"

    def _quantity(self, m: re.Match) -> str:
        one, many = self.rules.units[m["unit"]]
        if m.groupdict().get("int0") is not None:
            low = self._spell(m["sign0"], m["int0"], m["frac0"])
            return f"{low} {self.rules.through} {self._spell(m['sign'], m['int'], m['frac'])} {many}"
        if m["int"] == "1" and not m["frac"]:
            return f"{self.rules.minus} {one}" if m["sign"] else one
        return f"{self._spell(m['sign'], m['int'], m['frac'])} {many}"

    def _money(self, m: re.Match) -> str:
        symbol = m["cur"] or m["cur2"]
        one, many, minor_one, minor_many = self.rules.money[_CURRENCY_CODES.get(symbol, symbol)]
        whole, frac = (m["int"], m["frac"]) if m["cur"] else (m["int2"], m["frac2"])
        digits = whole.replace(self.rules.group, "") if self.rules.group else whole
        # Not cents ("3.505 €" is a measured amount), or more than words can say: as a quantity, digit by digit.
        if (frac is not None and len(frac) > 2) or not self._says(digits):
            return f"{self._spell(None, whole, frac)} {many}"
        major = int(digits)
        minor = int((frac or "0").ljust(2, "0"))
        parts = [one if major == 1 else f"{self._words(major)} {many}"] if major or not minor else []
        if minor:
            parts.append(minor_one if minor == 1 else f"{self._words(minor)} {minor_many}")
        return self.rules.conjunction.join(parts)

    def _ordinal(self, m: re.Match) -> str:
        if not self._says(m["n"], "ordinal"):
            return m[0]  # the plain-number rule reads its digits one by one ("nine nine ... th")
        return self._words(int(m["n"]), "ordinal")

    def _date(self, m: re.Match) -> str:
        day, month = int(m["d"]), int(m["m"])
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return m[0]
        r = self.rules
        # The word before it, looked for only in the last characters: a search over the whole text before each date
        # would be quadratic. A word that starts further back (a long one, or one before many spaces) counts as none.
        before = _WORD_BEFORE.search(m.string, max(0, m.start() - 64), m.start())
        ending = r.day_case.get(before[1].lower()) if before else None
        if ending is None and not m["y"]:
            return m[0]
        text = r.date[0].format(day=self._words(day, "ordinal") + (ending or ""), month=r.months[month - 1])
        if m["y"]:
            return text + r.date[1].format(year=self._words(int(m["y"]), "year"))
        return text + "." if _ONLY_SPACE.match(m.string, m.end()) else text  # the date's dot also ended the sentence

    def _time(self, m: re.Match) -> str:
        r = self.rules
        found = m.groupdict()
        if found["h"] is not None:
            hour, minute, ap = int(found["h"]), int(found["min"]), found.get("ap")
        else:
            hour, minute, ap = int(found["h2"]), 0, found["ap2"]
        hour_words = r.hour_words.get(hour) or self._words(hour)
        if minute == 0:
            text = hour_words if ap else r.clock[0].format(hour=hour_words)
        else:
            text = r.clock[1 if minute >= 10 else 2].format(hour=hour_words, minute=self._words(minute))
        return f"{text} {ap.upper()}M" if ap else text
