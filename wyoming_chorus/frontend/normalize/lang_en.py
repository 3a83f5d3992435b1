"""English: "twenty-one point five degrees Celsius", "seven thirty PM", "November twenty-ninth, twenty twenty-six",
"the third of May".

A 24-hour time is said on the 12-hour clock, as English speakers say the time of day: "14:00" "two PM", "21:15"
"nine fifteen PM", "00:00" "midnight", "12:00" "noon". "Fourteen hundred" is military and aviation usage, and
"fourteen o'clock" no one's; an hour up to 12 without AM or PM stays as written ("07:30" "seven thirty").
"""
from __future__ import annotations

from wyoming_chorus.frontend.normalize.rules import Noun, Rules


def _unit(singular: str, plural: str | None = None) -> Noun:
    return Noun((singular, plural or singular + "s"))


UNITS = {
    "°C": _unit("degree Celsius", "degrees Celsius"), "°F": _unit("degree Fahrenheit", "degrees Fahrenheit"),
    "°": _unit("degree"), "%": _unit("percent", "percent"), "K": _unit("kelvin"),
    "km/h": _unit("kilometre per hour", "kilometres per hour"), "m/s": _unit("metre per second", "metres per second"),
    "mph": _unit("mile per hour", "miles per hour"), "km": _unit("kilometre"), "m": _unit("metre"),
    "cm": _unit("centimetre"), "mm": _unit("millimetre"), "m²": _unit("square metre"), "m³": _unit("cubic metre"),
    "kg": _unit("kilogram"), "g": _unit("gram"), "l": _unit("litre"), "ml": _unit("millilitre"),
    "kWh": _unit("kilowatt hour"), "Wh": _unit("watt hour"), "kW": _unit("kilowatt"), "W": _unit("watt"),
    "V": _unit("volt"), "A": _unit("amp"), "mA": _unit("milliamp"), "Hz": _unit("hertz", "hertz"),
    "h": _unit("hour"), "min": _unit("minute"), "s": _unit("second"), "ms": _unit("millisecond"),
    "hPa": _unit("hectopascal"), "mbar": _unit("millibar"), "lx": _unit("lux", "lux"), "dB": _unit("decibel"),
    "ppm": _unit("part per million", "parts per million"),
    "µg/m³": _unit("microgram per cubic metre", "micrograms per cubic metre"),
    "GB": _unit("gigabyte"), "MB": _unit("megabyte"), "Mbit/s": _unit("megabit per second", "megabits per second"),
    "p": _unit("penny", "pence"),  # British energy prices: "28p/kWh"
}

RULES = Rules(
    "en", "point", ",", "[.]", "minus ", UNITS,
    money={"€": (_unit("euro"), _unit("cent")), "$": (_unit("dollar"), _unit("cent")),
           "£": (_unit("pound"), _unit("penny", "pence")), "CHF": (_unit("Swiss franc"), _unit("centime"))},
    conjunction=" and ", per="per", range="{low} to {high}",
    months=("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
            "November", "December"),
    date="{month} {day}{year}", date_day_first="the {day} of {month}{year}", year=", {year}",
    clock=("{hour} o'clock", "{hour} {minute}", "{hour} oh {minute}"), hour_words={0: "twelve"},
    am_pm=True, twelve_hour=("midnight", "noon"), ordinals={"st": "", "nd": "", "rd": "", "th": ""},
)
