"""Portuguese: "vinte e um vírgula cinco graus Celsius", "sete e trinta", "uma hora", "vinte e duas horas".
European by default (num2words' "pt": "dezasseis"); Brazilian for pt_BR ("dezesseis", "centavos"). A noun after a
number is told feminine from its ending ("uma mensagem", "duas portas"); "1°" after an article is an ordinal."""
from __future__ import annotations

import dataclasses
import re

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import (
    Rules,
    f,
    gender_by_ending,
    m,
    next_word,
    ordinal_after_article,
    singular_below_two,
)

_FEMININE = {"um": "uma", "dois": "duas"}
_ONE_TWO = re.compile(r"\b(um|dois)$|\b(um|dois)(?= mil\b)")
_HUNDREDS = re.compile(r"entos\b")
_WORD_END_O = re.compile(r"o\b")
_NOT_NOUNS = frozenset("de do da dos das e ou a ao à em no na com por para que é são está estão há mais menos entre "
                       "até desde sobre sem como mas se o os as um uma".split())
_ARTICLES = {"o": "m", "do": "m", "ao": "m", "no": "m", "pelo": "m", "a": "f", "da": "f", "à": "f", "na": "f"}
_FEMININE_ENDING = re.compile(r"(?:a|ção|são|dade|agem|ie)s?$|(?:ções|sões|agens)$")  # singular or plural
_FEMININE_NOUNS = frozenset(("noite", "tarde", "luz", "rede", "chave", "parte", "vez", "foto", "mão", "gente",
                             "fonte", "neve", "classe", "mulher", "flor", "cor", "moto", "rádio"))
_MASCULINE_NOUNS = frozenset(("dia", "mapa", "problema", "sistema", "programa", "tema", "clima", "idioma", "planeta",
                              "sofá"))


def _cardinal(number: int, gender: str, case: str, lang: str = "pt") -> str:
    words = num2words(number, lang=lang)
    if gender != "f":
        return words
    # "vinte e uma horas", "duzentas horas", "duas mil horas"; not across "milhões", a noun of its own
    head, millions, tail = words.rpartition("ões ")
    tail = _HUNDREDS.sub("entas", _ONE_TWO.sub(lambda m: _FEMININE[m[0]], tail))
    return head + millions + tail


def _ordinal(number: int, tag: str, lang: str = "pt") -> str:
    words = num2words(number, lang=lang, to="ordinal")
    return _WORD_END_O.sub("a", words) if tag == "f" else words  # "1ª" "primeira"


def _gender_of(digits: str, after: str) -> str:
    word = next_word(after, _NOT_NOUNS)
    if word is None:
        return ""
    return gender_by_ending(word, ("s", "es"), _FEMININE_NOUNS, _MASCULINE_NOUNS, _FEMININE_ENDING)


def _ordinal_context(tag: str, before: str, after: str) -> str | None:
    return ordinal_after_article(tag, before, after, _NOT_NOUNS, _ARTICLES)  # "o 1° andar"


def _day(number: int, case: str, lang: str = "pt") -> str:
    return "primeiro" if number == 1 else num2words(number, lang=lang)  # "primeiro de maio"


UNITS = {
    "°C": m("grau Celsius", "graus Celsius"), "°F": m("grau Fahrenheit", "graus Fahrenheit"),
    "°": m("grau", "graus"), "%": m("por cento", "por cento"), "K": m("kelvin", "kelvins"),
    "km/h": m("quilómetro por hora", "quilómetros por hora"), "m/s": m("metro por segundo", "metros por segundo"),
    "mph": f("milha por hora", "milhas por hora"), "km": m("quilómetro", "quilómetros"), "m": m("metro", "metros"),
    "cm": m("centímetro", "centímetros"), "mm": m("milímetro", "milímetros"),
    "m²": m("metro quadrado", "metros quadrados"), "m³": m("metro cúbico", "metros cúbicos"),
    "kg": m("quilograma", "quilogramas"), "g": m("grama", "gramas"), "l": m("litro", "litros"),
    "ml": m("mililitro", "mililitros"), "kWh": m("quilowatt-hora", "quilowatts-hora"),
    "Wh": m("watt-hora", "watts-hora"), "kW": m("quilowatt", "quilowatts"), "W": m("watt", "watts"),
    "V": m("volt", "volts"), "A": m("ampere", "amperes"), "mA": m("miliampere", "miliamperes"),
    "Hz": m("hertz", "hertz"), "h": f("hora", "horas"), "min": m("minuto", "minutos"),
    "s": m("segundo", "segundos"), "ms": m("milissegundo", "milissegundos"),
    "hPa": m("hectopascal", "hectopascais"), "mbar": m("milibar", "milibares"), "lx": m("lux", "lux"),
    "dB": m("decibel", "decibéis"), "ppm": f("parte por milhão", "partes por milhão"),
    "µg/m³": m("micrograma por metro cúbico", "microgramas por metro cúbico"), "GB": m("gigabyte", "gigabytes"),
    "MB": m("megabyte", "megabytes"), "Mbit/s": m("megabit por segundo", "megabits por segundo"),
}

RULES = Rules(
    "pt", "vírgula", ".", "[,.]", "menos ", UNITS,
    money={"€": (m("euro", "euros"), m("cêntimo", "cêntimos")), "$": (m("dólar", "dólares"), m("cêntimo",
           "cêntimos")), "£": (f("libra", "libras"), m("péni", "pence")), "CHF": (m("franco", "francos"),
           m("cêntimo", "cêntimos"))},
    conjunction=" e ", per="por", range="{low} a {high}",
    months=("janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro",
            "novembro", "dezembro"),
    date="{day} de {month}{year}", year=" de {year}", slash_dates=True, day=_day,
    clock=("{hours}", "{hour} e {minute}", "{hour} e {minute}"), hour=f("hora", "horas"), hour_gender="f",
    clock_h=True, gender_after={"às": "f", "as": "f", "das": "f", "à": "f"},  # "às 2": hours, "duas"
    ordinals={"º": "m", "ª": "f", ".º": "m", ".ª": "f", "°": "?"}, fraction_as_number=True,
    cardinal=_cardinal, ordinal=_ordinal, form=singular_below_two, ordinal_context=_ordinal_context,
    gender_of=_gender_of,
)
_BRAZILIAN_SPELLING = {"quilómetro": "quilômetro", "quilómetros": "quilômetros", "cêntimo": "centavo",
                       "cêntimos": "centavos", "péni": "pêni"}
BRAZIL = dataclasses.replace(
    RULES, lang="pt_BR",
    units={symbol: dataclasses.replace(noun, forms=tuple(" ".join(_BRAZILIAN_SPELLING.get(w, w) for w in form.split())
                                                         for form in noun.forms))
           for symbol, noun in UNITS.items()},
    money={"€": (m("euro", "euros"), m("centavo", "centavos")), "$": (m("dólar", "dólares"), m("centavo", "centavos")),
           "£": (f("libra", "libras"), m("pêni", "pence")), "CHF": (m("franco", "francos"), m("centavo", "centavos"))},
    cardinal=lambda number, gender, case: _cardinal(number, gender, case, "pt_BR"),
    ordinal=lambda number, tag: _ordinal(number, tag, "pt_BR"),
    day=lambda number, case: _day(number, case, "pt_BR"),
)
