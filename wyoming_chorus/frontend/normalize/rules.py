"""What one language's normalisation is made of: a `Rules` value per language (its tables, and at most a few tiny
functions for what a table cannot say, such as Russian cases or Spanish "veintiún"). The engine that applies them is
speller.py; the languages are the lang_*.py files beside this one.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# The unit symbols every language reads: what Home Assistant's sensors report, and a few more seen in announcements.
SYMBOLS = (
    "°C", "°F", "°", "%", "K", "km/h", "m/s", "mph", "km", "m", "cm", "mm", "m²", "m³", "kg", "g", "l", "ml", "kWh",
    "Wh", "kW", "W", "V", "A", "mA", "Hz", "h", "min", "s", "ms", "hPa", "mbar", "lx", "dB", "ppm", "µg/m³", "GB",
    "MB", "Mbit/s",
)
# Other spellings of the same units, read as the unit they stand for (HA writes the micro sign, people the Greek mu).
ALIASES = {"℃": "°C", "℉": "°F", "μg/m³": "µg/m³", "ug/m³": "µg/m³", "µg/m3": "µg/m³", "m3": "m³", "m2": "m²",
           "L": "l", "kwh": "kWh", "KWh": "kWh", "km/u": "km/h", "%RH": "%", "% RH": "%"}
# Currencies written as codes, read as their symbol.
CURRENCY_CODES = {"EUR": "€", "USD": "$", "GBP": "£", "RUB": "₽", "CNY": "¥", "JPY": "¥", "KRW": "₩", "CHF": "CHF"}


@dataclass(frozen=True)
class Noun:
    """What follows a number (a unit, a currency, the hour) and the number agrees with.

    `forms` are indexed by the language's `form` function: (singular, plural), or Russian's (one, few, many). A form
    with "{n}" places the number itself (Chinese, Japanese and Korean write no space, or put a word before it)."""
    forms: tuple[str, ...]
    gender: str = "m"          # of the number before it: "m", "f", "n"; "" for none (Spanish "uno por ciento")
    one: str | None = None     # the whole phrase for exactly 1, where it is not the number's word and the singular
    minus: str | None = None   # said for a minus sign in place of the language's ("零下5摄氏度", "영하 5도")


def m(*forms: str, one: str | None = None) -> Noun:
    return Noun(forms, "m", one)


def f(*forms: str, one: str | None = None) -> Noun:
    return Noun(forms, "f", one)


def n(*forms: str, one: str | None = None) -> Noun:
    return Noun(forms, "n", one)


def singular_for_one(number: int, fraction: bool, case: str) -> int:
    """English, German, Spanish, Italian: the singular for exactly one, else the plural ("1.5 degrees")."""
    return 0 if number == 1 and not fraction else 1


def singular_below_two(number: int, fraction: bool, case: str) -> int:
    """French and Portuguese: the plural starts at two ("1,5 degré", "0 degré")."""
    return 0 if number < 2 else 1


@dataclass(frozen=True)
class Rules:
    lang: str                                   # num2words' language
    point: str                                  # said between the integer and the fractional digits
    group: str                                  # thousands separator ("1,234"); "" when digits are never grouped
    decimal: str                                # decimal marks, as a regex class
    minus: str                                  # said for a minus sign, with the space after it if one is said
    units: Mapping[str, Noun]                   # every symbol of SYMBOLS, and the language's own abbreviations
    money: Mapping[str, tuple[Noun, Noun]] = field(default_factory=dict)  # symbol -> (major, minor)
    conjunction: str = ""                       # between money's major and minor parts
    per: str = ""                               # a price per unit: "0,32 €/kWh"; a unit after it ("per kWh")
    price: str = "{amount} {per} {unit}"        # the order a price per unit is said in (Japanese: unit first)
    range: str = ""                             # a range with a unit ("20-22 °C"), with {low} and {high}
    range_case: str = ""                        # the case its numbers take (Russian "от двадцати до двадцати двух")
    range_fraction: str = ""                    # the range when a bound has decimals, if it differs
    months: tuple[str, ...] = ()                # as written after a day (Russian: genitive); empty: no dates
    date: str = ""                              # with {day}, {month} and {year}, the formatted `year` or ""
    date_day_first: str = ""                    # English "3 May": "the third of May", when `date` is month first
    year: str = ""                              # with {year}
    year_written: str = ""                      # a regex of what a date's year may be followed by that `year` says
    year_nouns: Mapping[str, str] = field(default_factory=dict)  # noun -> ordinal tag: "в 2026 году" is ordinal
    # Word before a date -> the case its day takes. Only after these words is "29.11." (no year) a date: after
    # anything else it is as likely a number ending a sentence ("Es sind 21.5.").
    day_case: Mapping[str, str] = field(default_factory=dict)
    day_default: str = ""                       # the day's case after any other word
    slash_dates: bool = False                   # "29/11/2026" is a date, day first
    clock: tuple[str, str, str] = ("", "", "")  # full hour, HH:MM, HH:0M with {hour}, {hours}, {minute}
    hour: Noun | None = None                    # {hours}: the hour said as a quantity ("sept heures", "uma hora")
    hour_gender: str = ""                       # the hour's number agrees with it ("a la una", "ein Uhr")
    minute_gender: str = ""
    hour_words: Mapping[int, str] = field(default_factory=dict)  # hours said unlike their number
    clock_suffix: str = ""                      # a regex of what may follow a time and is said by it ("Uhr")
    clock_h: bool = False                       # "19h30" is a time
    am_pm: bool = False                         # "7 pm", "12:05 p.m."
    twelve_hour: tuple[str, str] | None = None  # (midnight, noon): a 24-hour time is said on the 12-hour clock
    ordinals: Mapping[str, str] = field(default_factory=dict)  # suffix of a numeric ordinal -> tag for `ordinal`
    gender_after: Mapping[str, str] = field(default_factory=dict)  # word -> the gender of a number after it
    case_after: Mapping[str, str] = field(default_factory=dict)    # word -> the case of a number after it
    case_carriers: frozenset[str] = frozenset()  # conjunctions the case carries across ("seit 1 h und 1 min")
    fraction_as_number: bool = False            # "21,25": "coma veinticinco", not "coma dos cinco"
    digits_stay: bool = False                   # numbers are left to the model (Chinese, Japanese, Korean)
    # The language's own words, where num2words' plain ones do not do. Each may raise what num2words raises.
    cardinal: Callable[[int, str, str], str] | None = None   # (number, gender, case)
    ordinal: Callable[[int, str], str] | None = None         # (number, tag from `ordinals`)
    day: Callable[[int, str], str] | None = None             # a date's day (number, case); None: the ordinal
    year_words: Callable[[int], str] | None = None           # None: num2words' "year"
    decimal_words: Callable[[str, str], str] | None = None   # (integer digits, fractional digits), in place of point
    # The gender of the noun a plain number counts, told from the text after it ("1 Fenster", "1 ventana"), and its
    # case after a space where the noun's ending tells one (Russian "одну минуту": "f a"); "" for no noun. Without
    # it, a number before a noun is said as when counting ("eins", "uno").
    gender_of: Callable[[str, str], str] | None = None       # (the number's digits, the text after it)
    # (tag from `ordinals`, the text before, the text after) -> the tag the ordinal takes there, or None where it is
    # no ordinal: German "der 1. Advent" (a "." that ends sentences elsewhere), Spanish "el primer aviso".
    ordinal_context: Callable[[str, str, str], str | None] | None = None
    form: Callable[[int, bool, str], int] = singular_for_one  # (number, has decimals, case) -> index into forms


_NEXT_WORD = re.compile(r"\s+([^\W\d_]+)")


def next_word(after: str, not_nouns: frozenset[str]) -> str | None:
    """The word right after a number when it may be the noun it counts (or an adjective before one): written in
    lower case, and none of the language's `not_nouns` (articles, prepositions, conjunctions, verbs)."""
    found = _NEXT_WORD.match(after)
    word = found[1] if found else None
    return word if word is not None and word.islower() and word not in not_nouns else None


def gender_by_ending(word: str, plural_endings: tuple[str, ...], feminine: frozenset[str],
                     masculine: frozenset[str], feminine_ending: re.Pattern[str]) -> str:
    """A noun's gender ("f" or "m"): its short lists of exceptions first (the word or its singular, each of
    `plural_endings` taken off), else its ending ("una ventana", "duas portas", "une fenêtre")."""
    listed = {word, *(word.removesuffix(ending) for ending in plural_endings)}
    if listed & feminine:
        return "f"
    if listed & masculine:
        return "m"
    return "f" if feminine_ending.search(word) else "m"


LAST_WORD = re.compile(r"(?<!\w)(\w+)\s*\Z")


def ordinal_after_article(tag: str, before: str, after: str, not_nouns: frozenset[str],
                          articles: dict[str, str]) -> str | None:
    """"1°" (the degree sign, as often written for "1º") is an ordinal between an article and a noun ("il 1° piano",
    "o 1° andar"), tagged with the article's gender; elsewhere a degree (None). Other tags stand as written."""
    if tag != "?":
        return tag
    article = LAST_WORD.search(before)
    if next_word(after, not_nouns) is None or article is None or article[1].lower() not in articles:
        return None
    return articles[article[1].lower()]
