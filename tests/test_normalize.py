"""Text normalisation: what announcements contain, spelled out the way the request's language says it."""
from __future__ import annotations

import pytest

from service.model.normalize import RULES, normalize


@pytest.mark.parametrize(
    ("language", "text", "spoken"),
    [
        # English: units, signs, decimals, grouping, ordinals
        ("en", "It is 21.5 °C outside.", "It is twenty-one point five degrees Celsius outside."),
        ("en", "-5 °C tonight", "minus five degrees Celsius tonight"),
        ("en", "1 °C and -1 °C", "one degree Celsius and minus one degree Celsius"),
        ("en", "Humidity 50%", "Humidity fifty percent"),
        ("en", "3 km away", "three kilometres away"),
        ("en", "1 km away", "one kilometre away"),
        ("en", "5 kWh today", "five kilowatt hours today"),
        ("en", "230 V", "two hundred and thirty volts"),
        ("en", "60 W", "sixty watts"),
        ("en", "1.5 h left", "one point five hours left"),
        ("en", "10 min", "ten minutes"),
        ("en", "80 km/h", "eighty kilometres per hour"),
        ("en", "5kWh", "five kilowatt hours"),
        ("en", "20-25 °C", "twenty to twenty-five degrees Celsius"),
        ("en", "1,234 steps", "one thousand two hundred and thirty-four steps"),
        ("en", "1,234,567.5",
         "one million two hundred and thirty-four thousand five hundred and sixty-seven point five"),
        ("en", "0.05", "zero point zero five"),
        ("en", "the 3rd floor", "the third floor"),
        ("en", "21st and 2nd", "twenty-first and second"),
        # English: times and dates
        ("en", "Wake up at 07:30.", "Wake up at seven thirty."),
        ("en", "at 07:05", "at seven oh five"),
        ("en", "at 07:00", "at seven o'clock"),
        ("en", "at 12:05 pm", "at twelve oh five PM"),
        ("en", "at 7 p.m.", "at seven PM."),
        ("en", "at 10am", "at ten AM"),
        ("en", "on 2026-11-29", "on November twenty-ninth, twenty twenty-six"),
        ("en", "on 29.11.2026", "on November twenty-ninth, twenty twenty-six"),
        # English: money
        ("en", "€5", "five euros"),
        ("en", "$3.50", "three dollars and fifty cents"),
        ("en", "$1.01", "one dollar and one cent"),
        ("en", "$0.99", "ninety-nine cents"),
        ("en", "12 EUR", "twelve euros"),
        # names, codes and glued letters
        ("en", "MP3 and H2O, v1.2", "MP3 and H2O, v1.2"),
        ("en", "code 0042", "code zero zero four two"),
        ("en", "a 3D print", "a three D print"),
        ("en", "no digits here.", "no digits here."),
        # German
        ("de", "Es sind 21,5 °C.", "Es sind einundzwanzig Komma fünf Grad Celsius."),
        ("de", "Es sind 21.5 °C.", "Es sind einundzwanzig Komma fünf Grad Celsius."),  # a sensor state
        ("de", "-5 °C", "minus fünf Grad Celsius"),
        ("de", "1.234 Schritte", "eintausendzweihundertvierunddreißig Schritte"),
        ("de", "50 %", "fünfzig Prozent"),
        ("de", "1 h und 2 h", "eine Stunde und zwei Stunden"),
        ("de", "1 kWh", "eine Kilowattstunde"),
        ("de", "3 km", "drei Kilometer"),
        ("de", "80 km/h", "achtzig Kilometer pro Stunde"),
        ("de", "um 07:30 Uhr", "um sieben Uhr dreißig"),
        ("de", "um 01:00", "um ein Uhr"),
        ("de", "um 1 Uhr", "um ein Uhr"),
        ("de", "Am 29.11.2026 kommt", "Am neunundzwanzigsten November zweitausendsechsundzwanzig kommt"),
        ("de", "am 29.11. kommt", "am neunundzwanzigsten November kommt"),
        ("de", "Heute ist der 1.12.", "Heute ist der erste Dezember."),
        ("de", "Es sind 21.5.", "Es sind einundzwanzig Komma fünf."),  # no year, no "am": a number, not a date
        ("de", "Heute ist der 2026-11-29", "Heute ist der neunundzwanzigste November zweitausendsechsundzwanzig"),
        ("de", "3,50 €", "drei Euro und fünfzig Cent"),
        ("de", "€5", "fünf Euro"),
        ("de_DE", "50 %", "fünfzig Prozent"),
        # numbers in the languages without full tables
        ("fr", "21,5 %", "vingt et un virgule cinq pour cent"),
        ("es", "1.234,5", "mil doscientos treinta y cuatro coma cinco"),
        ("it", "3,50", "tre virgola cinque zero"),
        ("pt-BR", "-2", "menos dois"),
        ("ru", "21,5 %", "двадцать один запятая пять %"),
        # auto: English rules, except in CJK text; CJK languages are left as they are
        (None, "It is 5 °C", "It is five degrees Celsius"),
        ("auto", "07:30", "seven thirty"),
        (None, "今日は21.5度です", "今日は21.5度です"),
        (None, "现在是21.5 °C", "现在是21.5 °C"),
        ("zh", "21.5 °C", "21.5 °C"),
        ("ja", "21.5 °C", "21.5 °C"),
        ("ko", "21.5 °C", "21.5 °C"),
        ("nl", "21.5 °C", "21.5 °C"),  # no rules: untouched rather than wrong
    ],
)
def test_spoken_forms(language, text, spoken):
    assert normalize(text, language) == spoken


def test_invalid_dates_and_times_are_not_read_as_dates_or_times():
    assert "November" not in normalize("on 2026-13-29", "en")
    assert "o'clock" not in normalize("25:00", "en")


def test_every_unit_of_the_full_tables_is_spelled_out():
    for code, two in (("en", "two"), ("de", "zwei")):
        for symbol, (one, many) in RULES[code].units.items():
            assert normalize(f"1 {symbol}", code) == one
            assert normalize(f"2 {symbol}.", code) == f"{two} {many}."
            assert normalize(f"-2{symbol}", code) == f"minus {two} {many}"
