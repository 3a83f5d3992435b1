"""German: "einundzwanzig Komma fünf Grad Celsius", "sieben Uhr dreißig", "am neunundzwanzigsten November"."""
from __future__ import annotations

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Rules, f, m, n


def _cardinal(number: int, gender: str, case: str) -> str:
    """num2words' words, but "ein Grad", "eine Stunde" before a noun (num2words says "eins")."""
    if number == 1 and gender:
        return "eine" if gender == "f" else "ein"
    return num2words(number, lang="de")


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
    "Uhr": n("Uhr", "Uhr"),  # "1 Uhr" is "ein Uhr", not "eins Uhr"
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
    day=_day, cardinal=_cardinal,
    clock=("{hour} Uhr", "{hour} Uhr {minute}", "{hour} Uhr {minute}"), hour_gender="n", clock_suffix="Uhr",
)
