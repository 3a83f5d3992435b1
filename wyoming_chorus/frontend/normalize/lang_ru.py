"""Russian: the noun agrees with the number ("один градус", "два градуса", "пять градусов", decimals in the genitive
singular: "двадцать одна целая пять десятых градуса"), and the number with the noun ("одна минута", "две минуты");
dates in the genitive ("двадцать девятого ноября две тысячи двадцать шестого года"), a year before its noun an
ordinal ("в две тысячи двадцать шестом году"), a number after до, от, около... in the genitive ("до пяти градусов"),
and before a noun in its gender, told from the noun's ending ("одно сообщение", "две двери")."""
from __future__ import annotations

from decimal import Decimal

from num2words import num2words

from wyoming_chorus.frontend.normalize.rules import Rules, f, m, next_word

_GENITIVE_AFTER = dict.fromkeys(("до", "от", "около", "более", "менее", "свыше", "после", "без", "из", "больше",
                                 "меньше", "кроме", "для", "против"), "g")
_NOT_NOUNS = frozenset("в во на и или с со по из до от за к у о об а но что это уже ещё еще раз из них".split())
_FEMININE_SOFT = frozenset(("дверь", "ночь", "часть", "площадь", "кровать", "мощь", "печь", "сеть", "розетк"))


def _gender_of(digits: str, after: str) -> str:
    """The gender of the noun after a number that has one (1, 21: "одна минута", "одно окно") or two (2, 22: "две
    двери"), from the noun's ending: after 1 it is in the nominative (-а, -я feminine; -о, -е neuter; -ость
    feminine) or a feminine accusative (-у, -ю: "одну минуту"), after 2 to 4 in the genitive singular (-ы, -и
    feminine; -а, -я masculine or neuter alike)."""
    word = next_word(after, _NOT_NOUNS)
    tens = int(digits[-2:])
    if word is None or 11 <= tens <= 14:
        return ""
    if tens % 10 == 1:
        if word.endswith(("у", "ю")):  # the accusative of a feminine noun: "через одну минуту"
            return "f a"
        if word.endswith(("а", "я", "ость")) or word in _FEMININE_SOFT:
            return "f"
        return "n" if word.endswith(("о", "е", "ё")) else "m"
    return "f" if tens % 10 == 2 and word.endswith(("ы", "и")) else ""


def _form(number: int, fraction: bool, case: str) -> int:
    """Which of (one, few, many) follows `number`: 1, 21 "градус"; 2-4, 22 "градуса"; 5-20, 25 "градусов"; after
    a decimal the genitive singular; in the genitive case (a range's "от ... до ...") only singular and plural."""
    last, tens = number % 10, number % 100
    if fraction:
        return 1
    if case == "g":
        return 1 if last == 1 and tens != 11 else 2
    if last == 1 and tens != 11:
        return 0
    return 1 if 2 <= last <= 4 and not 12 <= tens <= 14 else 2


def _cardinal(number: int, gender: str, case: str) -> str:
    return num2words(number, lang="ru", gender=gender or "m", case=case or "n")


def _decimal(whole: str, fraction: str) -> str:
    return num2words(Decimal(f"{whole}.{fraction}"), lang="ru")  # "двадцать одна целая пять десятых"


def _ordinal(number: int, tag: str) -> str:
    gender, case = tag.split()
    plural = gender == "p"
    return num2words(number, lang="ru", to="ordinal", gender="m" if plural else gender, case=case, plural=plural)


UNITS = {
    "°C": m("градус Цельсия", "градуса Цельсия", "градусов Цельсия"),
    "°F": m("градус Фаренгейта", "градуса Фаренгейта", "градусов Фаренгейта"),
    "°": m("градус", "градуса", "градусов"), "%": m("процент", "процента", "процентов"),
    "K": m("кельвин", "кельвина", "кельвинов"), "km/h": m("километр в час", "километра в час", "километров в час"),
    "m/s": m("метр в секунду", "метра в секунду", "метров в секунду"),
    "mph": f("миля в час", "мили в час", "миль в час"),
    "km": m("километр", "километра", "километров"), "m": m("метр", "метра", "метров"),
    "cm": m("сантиметр", "сантиметра", "сантиметров"), "mm": m("миллиметр", "миллиметра", "миллиметров"),
    "m²": m("квадратный метр", "квадратных метра", "квадратных метров"),
    "m³": m("кубический метр", "кубических метра", "кубических метров"),
    "kg": m("килограмм", "килограмма", "килограммов"), "g": m("грамм", "грамма", "граммов"),
    "l": m("литр", "литра", "литров"), "ml": m("миллилитр", "миллилитра", "миллилитров"),
    "kWh": m("киловатт-час", "киловатт-часа", "киловатт-часов"), "Wh": m("ватт-час", "ватт-часа", "ватт-часов"),
    "kW": m("киловатт", "киловатта", "киловатт"), "W": m("ватт", "ватта", "ватт"), "V": m("вольт", "вольта", "вольт"),
    "A": m("ампер", "ампера", "ампер"), "mA": m("миллиампер", "миллиампера", "миллиампер"),
    "Hz": m("герц", "герца", "герц"), "h": m("час", "часа", "часов"), "min": f("минута", "минуты", "минут"),
    "s": f("секунда", "секунды", "секунд"), "ms": f("миллисекунда", "миллисекунды", "миллисекунд"),
    "hPa": m("гектопаскаль", "гектопаскаля", "гектопаскалей"), "mbar": m("миллибар", "миллибара", "миллибар"),
    "lx": m("люкс", "люкса", "люксов"), "dB": m("децибел", "децибела", "децибел"),
    "ppm": f("часть на миллион", "части на миллион", "частей на миллион"),
    "µg/m³": m("микрограмм на кубический метр", "микрограмма на кубический метр", "микрограммов на кубический метр"),
    "GB": m("гигабайт", "гигабайта", "гигабайт"), "MB": m("мегабайт", "мегабайта", "мегабайт"),
    "Mbit/s": m("мегабит в секунду", "мегабита в секунду", "мегабит в секунду"),
}
# Russian abbreviations, read as the unit they stand for. Not "с" and "г", which are also words ("с", "г." for год).
_CYRILLIC = {"км/ч": "km/h", "м/с": "m/s", "км": "km", "м": "m", "см": "cm", "мм": "mm", "м²": "m²", "м³": "m³",
             "кг": "kg", "л": "l", "мл": "ml", "кВт·ч": "kWh", "кВтч": "kWh", "Вт·ч": "Wh", "кВт": "kW", "Вт": "W",
             "В": "V", "А": "A", "мА": "mA", "Гц": "Hz", "ч": "h", "мин": "min", "сек": "s", "мс": "ms", "гПа": "hPa",
             "мбар": "mbar", "лк": "lx", "дБ": "dB", "мкг/м³": "µg/m³", "ГБ": "GB", "Гб": "GB", "МБ": "MB",
             "Мб": "MB", "Мбит/с": "Mbit/s", "кВт*ч": "kWh", "кВт/ч": "kWh"}

RULES = Rules(
    "ru", "запятая", " ", "[,.]", "минус ", {**UNITS, **{short: UNITS[unit] for short, unit in _CYRILLIC.items()}},
    money={"€": (m("евро", "евро", "евро"), m("цент", "цента", "центов")),
           "$": (m("доллар", "доллара", "долларов"), m("цент", "цента", "центов")),
           "₽": (m("рубль", "рубля", "рублей"), f("копейка", "копейки", "копеек")),
           "руб.": (m("рубль", "рубля", "рублей"), f("копейка", "копейки", "копеек")),  # the written abbreviation
           "£": (m("фунт", "фунта", "фунтов"), m("пенни", "пенни", "пенни")),
           "CHF": (m("франк", "франка", "франков"), m("сантим", "сантима", "сантимов"))},
    conjunction=" ", per="за", range="от {low} до {high}", range_case="g", range_fraction="{low} — {high}",
    months=("января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
            "ноября", "декабря"),
    date="{day} {month}{year}", year=" {year} года", slash_dates=True,
    # "года" or "г." written after the year is said by `year` ("3 мая 2026 года", "2026 г."); a dot that also ends
    # the sentence stays.
    year_written=r"года(?!\w)|г\.(?=\s+[а-яё\d])|г(?=\.)", year_nouns={"году": "m p", "года": "m g", "год": "m n"},
    # The day is in the genitive ("встреча двадцать девятого ноября"), but "сегодня двадцать девятое ноября".
    day_case={"сегодня": "n", "завтра": "n", "вчера": "n", "послезавтра": "n", "на": "a", "до": "g", "с": "g",
              "к": "d", "по": "a"},
    day_default="g",
    day=lambda number, case: num2words(number, lang="ru", to="ordinal", gender="n", case=case),
    year_words=lambda year: num2words(year, lang="ru", to="ordinal", case="g"),
    clock=("{hours}", "{hour} {minute}", "{hour} ноль {minute}"), hour=m("час", "часа", "часов"),
    minute_gender="f", clock_suffix="ч",
    ordinals={"-й": "m n", "-ый": "m n", "-я": "f n", "-ая": "f n", "-е": "n n", "-ое": "n n", "-го": "m g",
              "-ого": "m g", "-му": "m d", "-ому": "m d", "-м": "m p", "-ом": "m p", "-ю": "f a", "-ой": "f g",
              "-х": "p g", "-ых": "p g"},
    cardinal=_cardinal, ordinal=_ordinal, decimal_words=_decimal, form=_form, case_after=_GENITIVE_AFTER,
    case_carriers=frozenset(("и", "или")),
    gender_of=_gender_of,
)
