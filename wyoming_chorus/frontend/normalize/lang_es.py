"""Spanish: "veintiún grados Celsius", "veintiuna horas", "siete y treinta", "el primero de mayo", "un mensaje",
"una ventana" (the gender of a noun after a number told from its ending), "el primer aviso" (apocope)."""
from __future__ import annotations

import re

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import LAST_WORD, Noun, Rules, f, gender_by_ending, m, next_word

_BEFORE_THOUSANDS = re.compile(r"\b(veinti)?uno(?= mil)")    # "veintiún mil", "un millón": num2words says "veintiuno"
_LAST_ONE = re.compile(r"\b(veinti)?uno$")
_HUNDREDS = re.compile(r"ientos\b")
_WORD_END_O = re.compile(r"o\b")
_NOT_NOUNS = frozenset("de del y e o u a al en con por para que es son está están hay ha han más menos entre hasta "
                       "desde sobre sin como pero se le lo la los las el un una".split())
_ARTICLES = {"el": "m", "del": "m", "al": "m", "la": "f", "los": "m", "las": "f"}
_FEMININE = re.compile(r"(?:a|ción|sión|dad|tad|tud|umbre)$|(?:as|ciones|siones|dades|tudes|umbres)$")
_FEMININE_NOUNS = frozenset(("noche", "tarde", "calle", "llave", "luz", "red", "clase", "parte", "vez", "foto",
                             "moto", "radio", "mano", "imagen", "gente", "fuente", "nieve", "leche", "flor", "mujer"))
_MASCULINE_NOUNS = frozenset(("día", "mapa", "problema", "programa", "sistema", "tema", "clima", "idioma", "planeta",
                              "sofá", "aroma"))



def _cardinal(number: int, gender: str, case: str) -> str:
    words = _BEFORE_THOUSANDS.sub(lambda m: "veintiún" if m[1] else "un", num2words(number, lang="es"))
    if gender == "m":  # "veintiún grados", "un vatio"
        return _LAST_ONE.sub(lambda m: "veintiún" if m[1] else "un", words)
    if gender == "f":  # "veintiuna horas", "doscientas libras" (not across "millones", a noun of its own)
        head, millions, tail = words.rpartition("illones ")
        tail = _HUNDREDS.sub("ientas", _LAST_ONE.sub(lambda m: (m[1] or "") + "una", tail))
        return head + millions + tail
    return words


def _ordinal(number: int, tag: str) -> str:
    words = num2words(number, lang="es", to="ordinal")
    if tag == "f":
        return _WORD_END_O.sub("a", words)  # "1.ª" "primera"
    return re.sub(r"(prim|terc)ero$", r"\1er", words) if tag == "short" else words  # "1er piso" "primer piso"


def _gender_of(digits: str, after: str) -> str:
    """"un mensaje", "una ventana", "doscientas personas": a noun's gender from its ending, "" for no noun."""
    word = next_word(after, _NOT_NOUNS)
    if word is None:
        return ""
    return gender_by_ending(word, ("s", "es"), _FEMININE_NOUNS, _MASCULINE_NOUNS, _FEMININE)  # "noches", "luces"


def _ordinal_context(tag: str, before: str, after: str) -> str | None:
    """"el primer aviso", "el tercer piso": primero and tercero lose their -o before a masculine noun (not in "el 1.º
    de la lista"). "1°", written with the degree sign, is an ordinal only between an article and a noun ("el 1° piso");
    elsewhere it is a degree."""
    noun = next_word(after, _NOT_NOUNS)
    if tag == "?":
        article = LAST_WORD.search(before)
        if noun is None or article is None or article[1].lower() not in _ARTICLES:
            return None
        tag = _ARTICLES[article[1].lower()]
    return "short" if tag == "m" and noun is not None else tag


def _day(number: int, case: str) -> str:
    return "primero" if number == 1 else num2words(number, lang="es")


UNITS = {
    "°C": m("grado Celsius", "grados Celsius"), "°F": m("grado Fahrenheit", "grados Fahrenheit"),
    "°": m("grado", "grados"), "%": Noun(("por ciento", "por ciento"), ""), "K": m("kelvin", "kelvin"),
    "km/h": m("kilómetro por hora", "kilómetros por hora"), "m/s": m("metro por segundo", "metros por segundo"),
    "mph": f("milla por hora", "millas por hora"), "km": m("kilómetro", "kilómetros"), "m": m("metro", "metros"),
    "cm": m("centímetro", "centímetros"), "mm": m("milímetro", "milímetros"),
    "m²": m("metro cuadrado", "metros cuadrados"), "m³": m("metro cúbico", "metros cúbicos"),
    "kg": m("kilogramo", "kilogramos"), "g": m("gramo", "gramos"), "l": m("litro", "litros"),
    "ml": m("mililitro", "mililitros"), "kWh": m("kilovatio hora", "kilovatios hora"),
    "Wh": m("vatio hora", "vatios hora"), "kW": m("kilovatio", "kilovatios"), "W": m("vatio", "vatios"),
    "V": m("voltio", "voltios"), "A": m("amperio", "amperios"), "mA": m("miliamperio", "miliamperios"),
    "Hz": m("hercio", "hercios"), "h": f("hora", "horas"), "min": m("minuto", "minutos"),
    "s": m("segundo", "segundos"), "ms": m("milisegundo", "milisegundos"),
    "hPa": m("hectopascal", "hectopascales"), "mbar": m("milibar", "milibares"), "lx": m("lux", "lux"),
    "dB": m("decibelio", "decibelios"), "ppm": f("parte por millón", "partes por millón"),
    "µg/m³": m("microgramo por metro cúbico", "microgramos por metro cúbico"), "GB": m("gigabyte", "gigabytes"),
    "MB": m("megabyte", "megabytes"), "Mbit/s": m("megabit por segundo", "megabits por segundo"),
    # Spanish abbreviations
    "seg": m("segundo", "segundos"), "hs": f("hora", "horas"),
}

RULES = Rules(
    "es", "coma", ".", "[,.]", "menos ", UNITS,
    money={"€": (m("euro", "euros"), m("céntimo", "céntimos")), "$": (m("dólar", "dólares"), m("centavo", "centavos")),
           "£": (f("libra", "libras"), m("penique", "peniques")), "CHF": (m("franco", "francos"), m("céntimo",
                                                                                               "céntimos"))},
    conjunction=" con ", per="por", range="{low} a {high}",
    months=("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
            "noviembre", "diciembre"),
    date="{day} de {month}{year}", year=" de {year}", slash_dates=True, day=_day,
    clock=("{hour}", "{hour} y {minute}", "{hour} y {minute}"), hour_gender="f", clock_suffix="h",
    gender_after={"la": "f", "las": "f"},  # "Son las 7", "Es la 1": hours
    ordinals={"º": "m", "ª": "f", ".º": "m", ".ª": "f", "er": "short", ".er": "short", "°": "?"},
    fraction_as_number=True, cardinal=_cardinal, ordinal=_ordinal, ordinal_context=_ordinal_context,
    gender_of=_gender_of,
)
