"""Italian: "ventuno virgola cinque gradi Celsius", "sette e trenta", "il primo maggio", "un'ora", "un messaggio",
"una finestra", "uno sconto" (the noun after a number told from its ending), "il primo piano" ("1°" after an
article)."""
from __future__ import annotations

import re

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Rules, f, m, next_word, ordinal_after_article

_WORD_END_O = re.compile(r"o\b")
_NOT_NOUNS = frozenset("di del della dei delle e ed o a al alla in con per che è sono c'è su tra fra da dal come ma "
                       "si il lo la i gli le un una ho ha hanno".split())
_ARTICLES = {"il": "m", "lo": "m", "al": "m", "allo": "m", "del": "m", "dello": "m", "nel": "m", "nello": "m",
             "dal": "m", "sul": "m", "la": "f", "alla": "f", "della": "f", "nella": "f", "dalla": "f", "sulla": "f"}
_FEMININE = re.compile(r"(?:a|zione|sione|tà|tù)$")
_FEMININE_NOUNS = frozenset(("chiave", "luce", "notte", "parte", "fonte", "classe", "neve", "gente", "mano", "foto",
                             "radio", "moto", "serie"))
_MASCULINE_NOUNS = frozenset(("problema", "sistema", "programma", "tema", "clima", "cinema", "pigiama"))
_UNO = re.compile(r"(?:s[^aeiouàèéìòù]|z|gn|ps|pn|x|y)")  # "uno sconto", "uno zaino"


def _cardinal(number: int, gender: str, case: str) -> str:
    if number == 1 and gender:
        return {"f": "una", "uno": "uno"}.get(gender, "un")  # "un grado", "una settimana", "uno sconto"
    return num2words(number, lang="it")


def _gender_of(digits: str, after: str) -> str:
    word = next_word(after, _NOT_NOUNS)
    if word is None:
        return ""
    if word in _FEMININE_NOUNS or (word not in _MASCULINE_NOUNS and _FEMININE.search(word)):
        return "f"
    return "uno" if _UNO.match(word) else "m"


def _ordinal_context(tag: str, before: str, after: str) -> str | None:
    return ordinal_after_article(tag, before, after, _NOT_NOUNS, _ARTICLES)  # "il 1° piano", "fuori 1°"


def _ordinal(number: int, tag: str) -> str:
    words = num2words(number, lang="it", to="ordinal")
    return _WORD_END_O.sub("a", words) if tag == "f" else words  # "1ª" "prima"


def _day(number: int, case: str) -> str:
    return "primo" if number == 1 else num2words(number, lang="it")


UNITS = {
    "°C": m("grado Celsius", "gradi Celsius"), "°F": m("grado Fahrenheit", "gradi Fahrenheit"),
    "°": m("grado", "gradi"), "%": m("per cento", "per cento"), "K": m("kelvin", "kelvin"),
    "km/h": m("chilometro orario", "chilometri orari"), "m/s": m("metro al secondo", "metri al secondo"),
    "mph": m("miglio orario", "miglia orarie"), "km": m("chilometro", "chilometri"), "m": m("metro", "metri"),
    "cm": m("centimetro", "centimetri"), "mm": m("millimetro", "millimetri"),
    "m²": m("metro quadrato", "metri quadrati"), "m³": m("metro cubo", "metri cubi"),
    "kg": m("chilogrammo", "chilogrammi"), "g": m("grammo", "grammi"), "l": m("litro", "litri"),
    "ml": m("millilitro", "millilitri"), "kWh": m("chilowattora", "chilowattora"),
    "Wh": m("wattora", "wattora"), "kW": m("chilowatt", "chilowatt"), "W": m("watt", "watt"),
    "V": m("volt", "volt"), "A": m("ampere", "ampere"), "mA": m("milliampere", "milliampere"),
    "Hz": m("hertz", "hertz"), "h": f("ora", "ore", one="un'ora"), "min": m("minuto", "minuti"),
    "s": m("secondo", "secondi"), "ms": m("millisecondo", "millisecondi"),
    "hPa": m("ettopascal", "ettopascal"), "mbar": m("millibar", "millibar"), "lx": m("lux", "lux"),
    "dB": m("decibel", "decibel"), "ppm": f("parte per milione", "parti per milione"),
    "µg/m³": m("microgrammo per metro cubo", "microgrammi per metro cubo"), "GB": m("gigabyte", "gigabyte"),
    "MB": m("megabyte", "megabyte"), "Mbit/s": m("megabit al secondo", "megabit al secondo"),
}

RULES = Rules(
    "it", "virgola", ".", "[,.]", "meno ", UNITS,
    money={"€": (m("euro", "euro"), m("centesimo", "centesimi")), "$": (m("dollaro", "dollari"), m("centesimo",
           "centesimi")), "£": (f("sterlina", "sterline"), m("penny", "pence")),
           "CHF": (m("franco", "franchi"), m("centesimo", "centesimi"))},
    conjunction=" e ", per="al", range="da {low} a {high}",
    months=("gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre", "ottobre",
            "novembre", "dicembre"),
    date="{day} {month}{year}", year=" {year}", slash_dates=True, day=_day,
    clock=("{hour}", "{hour} e {minute}", "{hour} e {minute}"), hour_gender="f", clock_suffix="h",
    ordinals={"º": "m", "ª": "f", ".º": "m", ".ª": "f", "°": "?"}, fraction_as_number=True, cardinal=_cardinal,
    ordinal=_ordinal, ordinal_context=_ordinal_context, gender_of=_gender_of,
)
