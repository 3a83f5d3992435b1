"""French: "vingt et un virgule cinq degrés Celsius", "sept heures trente", "le premier mai", "une heure", "une
fenêtre" (a feminine noun after a number, told from its ending or a short list of household nouns)."""
from __future__ import annotations

import re

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Rules, f, gender_by_ending, m, next_word, singular_below_two

_LAST_UN = re.compile(r"\bun$")
_NOT_NOUNS = frozenset("de du des et ou à au aux en avec par pour que qui est sont sur sous dans le la les un une a "
                       "ont y entre sur chez".split())
_FEMININE = re.compile(r"(?:tion|sion|té|ure|ette|elle|ance|ence|ière|ée|ie|ise|ade|ine|enne|onne|esse)s?$")
_FEMININE_NOUNS = frozenset(("fenêtre", "porte", "lampe", "semaine", "nuit", "pièce", "chambre", "salle", "maison",
                             "voiture", "alarme", "personne", "fois", "seconde", "tâche", "douche", "clé", "plante",
                             "ampoule", "chaudière", "minute", "heure", "journée", "caméra", "télé", "radio"))
_MASCULINE_NOUNS = frozenset(("lycée", "musée", "été", "comité", "côté", "génie", "parapluie", "magazine", "incendie",
                              "ménage"))


def _gender_of(digits: str, after: str) -> str:
    word = next_word(after, _NOT_NOUNS)
    if word is None:
        return ""
    return gender_by_ending(word, ("s", "x"), _FEMININE_NOUNS, _MASCULINE_NOUNS, _FEMININE)


def _cardinal(number: int, gender: str, case: str) -> str:
    words = num2words(number, lang="fr")
    return _LAST_UN.sub("une", words) if gender == "f" else words  # "vingt et une heures"


def _ordinal(number: int, tag: str) -> str:
    if number == 1:
        return "première" if tag == "f" else "premier"
    return num2words(number, lang="fr", to="ordinal")


def _day(number: int, case: str) -> str:
    return "premier" if number == 1 else num2words(number, lang="fr")  # "le premier mai", "le deux mai"


UNITS = {
    "°C": m("degré Celsius", "degrés Celsius"), "°F": m("degré Fahrenheit", "degrés Fahrenheit"),
    "°": m("degré", "degrés"), "%": m("pour cent", "pour cent"), "K": m("kelvin", "kelvins"),
    "km/h": m("kilomètre par heure", "kilomètres par heure"), "m/s": m("mètre par seconde", "mètres par seconde"),
    "mph": m("mile par heure", "miles par heure"), "km": m("kilomètre", "kilomètres"), "m": m("mètre", "mètres"),
    "cm": m("centimètre", "centimètres"), "mm": m("millimètre", "millimètres"),
    "m²": m("mètre carré", "mètres carrés"), "m³": m("mètre cube", "mètres cubes"),
    "kg": m("kilogramme", "kilogrammes"), "g": m("gramme", "grammes"), "l": m("litre", "litres"),
    "ml": m("millilitre", "millilitres"), "kWh": m("kilowattheure", "kilowattheures"),
    "Wh": m("wattheure", "wattheures"), "kW": m("kilowatt", "kilowatts"), "W": m("watt", "watts"),
    "V": m("volt", "volts"), "A": m("ampère", "ampères"), "mA": m("milliampère", "milliampères"),
    "Hz": m("hertz", "hertz"), "h": f("heure", "heures"), "min": f("minute", "minutes"),
    "s": f("seconde", "secondes"), "ms": f("milliseconde", "millisecondes"),
    "hPa": m("hectopascal", "hectopascals"), "mbar": m("millibar", "millibars"), "lx": m("lux", "lux"),
    "dB": m("décibel", "décibels"), "ppm": f("partie par million", "parties par million"),
    "µg/m³": m("microgramme par mètre cube", "microgrammes par mètre cube"), "GB": m("gigaoctet", "gigaoctets"),
    "MB": m("mégaoctet", "mégaoctets"), "Mbit/s": m("mégabit par seconde", "mégabits par seconde"),
    # French abbreviations
    "Go": m("gigaoctet", "gigaoctets"), "Mo": m("mégaoctet", "mégaoctets"), "sec": f("seconde", "secondes"),
}

RULES = Rules(
    "fr", "virgule", " ", "[,.]", "moins ", UNITS,
    money={"€": (m("euro", "euros"), m("centime", "centimes")), "$": (m("dollar", "dollars"), m("cent", "cents")),
           "£": (f("livre", "livres"), m("penny", "pence")), "CHF": (m("franc", "francs"), m("centime", "centimes"))},
    conjunction=" et ", per="par", range="{low} à {high}",
    months=("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
            "novembre", "décembre"),
    date="{day} {month}{year}", year=" {year}", slash_dates=True, day=_day,
    clock=("{hours}", "{hours} {minute}", "{hours} {minute}"), hour=f("heure", "heures"), minute_gender="f",
    clock_h=True, ordinals={"er": "m", "re": "f", "ère": "f", "e": "", "ème": "", "eme": "", "ᵉ": "", "ᵉʳ": "m"},
    fraction_as_number=True, cardinal=_cardinal, ordinal=_ordinal, form=singular_below_two, gender_of=_gender_of,
)
