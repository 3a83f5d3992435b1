"""German: "einundzwanzig Komma fünf Grad Celsius", "sieben Uhr dreißig", "am neunundzwanzigsten November",
"in einer Stunde" (a one before a noun declines like the article, in the case its preposition asks), "der erste
Advent" (an ordinal after an article)."""
from __future__ import annotations

import re

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Rules, f, m, n

# "ein" before a noun, by gender and case (nominative unless a preposition asks another): "eins" only when counting.
_ONE = {"f": {"d": "einer", "g": "einer"}, "m": {"a": "einen", "d": "einem", "g": "eines"},
        "n": {"d": "einem", "g": "eines"}}
_CASE_AFTER = {**dict.fromkeys(("aus", "bei", "mit", "nach", "seit", "von", "zu", "ab", "binnen", "in", "vor"), "d"),
               **dict.fromkeys(("für", "um", "durch", "ohne", "gegen", "über", "auf", "bis", "pro"), "a"),
               **dict.fromkeys(("gibt", "habe", "hast", "hat", "haben", "habt"), "a"),  # "es gibt einen Termin"
               **dict.fromkeys(("innerhalb", "außerhalb", "während", "wegen"), "g")}
# A noun's gender from its ending (most feminine nouns end so), or from a few household nouns that do not tell it.
_FEMININE = re.compile(r"(?:e|ung|heit|keit|schaft|ion|tät|ik|ei|ur)$")
_FEMININE_NOUNS = frozenset(("Nachricht", "Tür", "Nacht", "Zeit", "Person", "Fahrt", "Rechnung", "Pflanze"))
_NEUTER = re.compile(r"(?:chen|lein|ment|um|tum|nis|ier|er)$")  # "Fenster", "Zimmer", "Zertifikat" stay guesses
_NEUTER_NOUNS = frozenset(("Jahr", "Mal", "Licht", "Gerät", "Grad", "Prozent", "Stück", "Paket", "Glas", "Bad"))
_NEXT_WORDS = re.compile(r"\s+([^\W\d_]+)(?:\s+([^\W\d_]+))?")
_ARTICLE_BEFORE = re.compile(r"(?:(?<!\w)(\w+)\s+)?(\w+)\s*\Z")
_WEAK_EN = frozenset(("am", "im", "zum", "vom", "beim", "zur", "dem", "den", "des", "einem", "einen", "eines", "einer"))
_WEAK_E = frozenset(("die", "das", "ins", "ans", "aufs", "eine"))


def _cardinal(number: int, gender: str, case: str) -> str:
    """num2words' words, but "ein Grad", "eine Stunde", "in einer Stunde" before a noun (num2words says "eins")."""
    if number == 1 and gender:
        return _ONE[gender].get(case, "eine" if gender == "f" else "ein")
    return num2words(number, lang="de")


def _gender_of(digits: str, after: str) -> str:
    """The gender of the noun after a number ("1 Fenster", "1 neue Nachricht"): nouns are capitalised, an adjective
    before one ends in -e, -er, -es or -en; "" when no noun follows ("1 und 2", "Raum 1 ist frei")."""
    words = _NEXT_WORDS.match(after)
    if not words:
        return ""
    first, second = words[1], words[2]
    noun = first if first[0].isupper() else second if second and second[0].isupper() and \
        re.search(r"e[mnrs]?$", first) else None
    if noun is None:
        return ""
    if noun in _FEMININE_NOUNS or (noun not in _NEUTER_NOUNS and _FEMININE.search(noun)):
        return "f"
    return "n" if noun in _NEUTER_NOUNS or _NEUTER.search(noun) else "m"


def _ordinal_context(tag: str, before: str, after: str) -> str | None:
    """"1." is an ordinal after an article ("der 1. Advent", "am 2. Tag", "in der 3. Etage"), declined weak: "-e"
    after der, die, das in the nominative and accusative, "-en" otherwise. After any other word the dot may as well end
    a sentence ("Es sind 3. Morgen ...")."""
    words = _ARTICLE_BEFORE.search(before)
    if not words:
        return None
    earlier, article = (words[1] or "").lower(), words[2].lower()
    if article in _WEAK_EN or (article == "der" and earlier in _CASE_AFTER):
        return "n"
    return "" if article in _WEAK_E or article == "der" else None


def _ordinal(number: int, tag: str) -> str:
    return num2words(number, lang="de", to="ordinal") + tag  # "erste", "ersten"


def _day(number: int, case: str) -> str:
    return num2words(number, lang="de", to="ordinal") + case  # "am neunundzwanzigsten": the ending is the case


UNITS = {
    "°C": n("Grad Celsius", "Grad Celsius"), "°F": n("Grad Fahrenheit", "Grad Fahrenheit"), "°": n("Grad", "Grad"),
    "%": n("Prozent", "Prozent"), "K": n("Kelvin", "Kelvin"),
    "km/h": m("Kilometer pro Stunde", "Kilometer pro Stunde"), "m/s": m("Meter pro Sekunde", "Meter pro Sekunde"),
    "mph": f("Meile pro Stunde", "Meilen pro Stunde"), "km": m("Kilometer", "Kilometer"), "m": m("Meter", "Meter"),
    "cm": m("Zentimeter", "Zentimeter"), "mm": m("Millimeter", "Millimeter"),
    "m²": m("Quadratmeter", "Quadratmeter"), "m³": m("Kubikmeter", "Kubikmeter"), "kg": n("Kilogramm", "Kilogramm"),
    "g": n("Gramm", "Gramm"), "l": m("Liter", "Liter"), "ml": m("Milliliter", "Milliliter"),
    "kWh": f("Kilowattstunde", "Kilowattstunden"), "Wh": f("Wattstunde", "Wattstunden"),
    "kW": n("Kilowatt", "Kilowatt"), "W": n("Watt", "Watt"), "V": n("Volt", "Volt"), "A": n("Ampere", "Ampere"),
    "mA": n("Milliampere", "Milliampere"), "Hz": n("Hertz", "Hertz"), "h": f("Stunde", "Stunden"),
    "min": f("Minute", "Minuten"), "s": f("Sekunde", "Sekunden"), "ms": f("Millisekunde", "Millisekunden"),
    "hPa": n("Hektopascal", "Hektopascal"), "mbar": n("Millibar", "Millibar"), "lx": n("Lux", "Lux"),
    "dB": n("Dezibel", "Dezibel"), "ppm": n("Teil pro Million", "Teile pro Million"),
    "µg/m³": n("Mikrogramm pro Kubikmeter", "Mikrogramm pro Kubikmeter"), "GB": n("Gigabyte", "Gigabyte"),
    "MB": n("Megabyte", "Megabyte"), "Mbit/s": n("Megabit pro Sekunde", "Megabit pro Sekunde"),
    # German abbreviations
    "Std.": f("Stunde", "Stunden"), "Min.": f("Minute", "Minuten"), "Sek.": f("Sekunde", "Sekunden"),
    "ct": m("Cent", "Cent"),  # "32 ct/kWh"
    "Uhr": n("Uhr", "Uhr", one="ein Uhr"),  # "ab 1 Uhr" is "ab ein Uhr": the hour is not declined
}

RULES = Rules(
    # "." also marks decimals where it cannot be a thousands separator: sensor states read "21.5" in any locale.
    "de", "Komma", ".", "[,.]", "minus ", UNITS,
    money={"€": (m("Euro", "Euro"), m("Cent", "Cent")), "$": (m("Dollar", "Dollar"), m("Cent", "Cent")),
           "£": (n("Pfund", "Pfund"), m("Penny", "Pence")), "CHF": (m("Franken", "Franken"), m("Rappen", "Rappen"))},
    conjunction=" und ", per="pro", range="{low} bis {high}",
    months=("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
            "November", "Dezember"),
    date="{day} {month}{year}", year=" {year}",
    day_case={"am": "n", "vom": "n", "zum": "n", "dem": "n", "den": "n", "der": "", "bis": "n", "ab": "n"},
    day=_day, cardinal=_cardinal, ordinal=_ordinal, ordinals={".": ""}, ordinal_context=_ordinal_context,
    case_after=_CASE_AFTER, case_carriers=frozenset(("und", "oder")), gender_of=_gender_of,
    clock=("{hour} Uhr", "{hour} Uhr {minute}", "{hour} Uhr {minute}"), hour_gender="n", clock_suffix="Uhr",
)
