"""Dates and clock times of one language: the first passes speller.py applies, before any number in them could be
read as a plain one ("29.11.2026", "3 May 2026", "07:30", "19h30", "7 pm")."""
from __future__ import annotations

import re
from collections.abc import Callable

from num2words import num2words

from wyoming_chorus.frontend.normalize.words import NumberWords, word_before

_ONLY_SPACE = re.compile(r"\s*\Z")
Pass = tuple[re.Pattern, Callable[[re.Match], str]]


class Calendar:
    def __init__(self, words: NumberWords, months: dict[str, int]):
        self.words = words
        self.rules = words.rules
        self._months = months

    def passes(self) -> list[Pass]:
        r = self.rules
        found: list[Pass] = []

        def add(pattern: str, replace: Callable[[re.Match], str]) -> None:
            found.append((re.compile(pattern), replace))

        if r.months:
            # What the template says after the year may be written too ("3 мая 2026 года"): said once.
            said = rf"(?:\s?(?:{r.year_written}))?" if r.year_written else ""
            if not r.digits_stay:  # first: the words other date passes write ("January first") have no digits
                names = "|".join(re.escape(name) for name in r.months)
                year_after = rf"(?:,?\s(?:de\s)?(?P<y>\d{{4}})(?!\d){said})?"
                if r.date.startswith("{month}"):  # "May 3rd, 2026"
                    add(rf"(?<!\w)(?P<mn>(?i:{names}))\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?!\w){year_after}",
                        self._date)
                if r.date_day_first:  # "3 May 2026": the name capitalised, as "3 may be" is not a date
                    add(rf"(?<![\w.,])(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s(?P<df>{names})(?!\w){year_after}",
                        self._date)
                else:  # "3. Mai", "1er mai", "3 de mayo", "1° maggio", "3 мая"
                    add(rf"(?<![\w.,])(?P<d>\d{{1,2}})(?:\.|er|º|°)?\s(?:de\s)?(?P<mn>(?i:{names}))(?!\w){year_after}",
                        self._date)
            add(r"(?<![\d.\-/])(?P<y>\d{4})(?P<s>[-/])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})(?![\d\-/])", self._date)
            year = rf"(?:(?P<y>\d{{4}}){said})" + ("?" if r.day_case else "")  # "am 29.11." needs no year in German
            add(rf"(?<![\d.])(?P<d>\d{{1,2}})\.(?P<m>\d{{1,2}})\.{year}(?!\d)", self._date)
            if r.slash_dates:
                add(rf"(?<![\d/.])(?P<d>\d{{1,2}})/(?P<m>\d{{1,2}})/(?P<y>\d{{4}}){said}(?![\d/])", self._date)
        if r.clock[0]:
            ampm = r"\s?(?P<ap@>[aApP])\.?\s?[mM](?![a-zA-Z])"
            suffix = (f"(?:{ampm.replace('@', '')})?" if r.am_pm
                      else rf"(?:\s?(?:{r.clock_suffix})(?!\w))?" if r.clock_suffix else "")
            separator = r"(?::|\s?h\s?)" if r.clock_h else ":"
            time = rf"(?<![\d:.,])(?P<h>[01]?\d|2[0-4]){separator}(?P<min>[0-5]\d)(?![\d:]){suffix}"
            if r.am_pm:  # "7 pm"
                time += rf"|(?<![\d:.,])(?P<h2>1[0-2]|0?[1-9]){ampm.replace('@', '2')}"
            add(time, self._time)
        return found

    def _date(self, m: re.Match) -> str:
        r, words = self.rules, self.words
        found = m.groupdict()
        named = found.get("mn") or found.get("df")
        day, month = int(m["d"]), (self._months[named.casefold()] + 1 if named else int(m["m"]))
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return m[0]
        before = word_before(m)
        case = r.day_case.get(before)
        if case is None and not m["y"] and not named:
            return m[0]
        if r.digits_stay:
            day_words, year = str(day), m["y"]
        else:
            day_case, day_hook = (r.day_default if case is None else case), r.day
            day_words = words.safe((lambda: day_hook(day, day_case)) if day_hook else
                                   (lambda: num2words(day, lang=r.lang, to="ordinal")), str(day))
            year_words = r.year_words
            year = m["y"] and words.safe((lambda: year_words(int(m["y"]))) if year_words else
                                         (lambda: num2words(int(m["y"]), lang=r.lang, to="year")), m["y"])
        template = r.date
        if found.get("df"):  # "the third of May"; "the" once after "on the 3 May"
            template = r.date_day_first.removeprefix("the ") if before == "the" else r.date_day_first
        text = template.format(day=day_words, month=r.months[month - 1], year=r.year.format(year=year) if year else "")
        if m["y"] or named:
            return text
        return text + "." if _ONLY_SPACE.match(m.string, m.end()) else text  # the date's dot also ended the sentence

    def _time(self, m: re.Match) -> str:
        r, words = self.rules, self.words
        found = m.groupdict()
        if found["h"] is not None:
            hour, minute, ap = int(found["h"]), int(found["min"]), found.get("ap")
        else:
            hour, minute, ap = int(found["h2"]), 0, found["ap2"]
        if r.twelve_hour and ap is None:  # "14:00", "two PM"; "00:00", "midnight"
            midnight, noon = r.twelve_hour
            if minute == 0 and hour in (0, 12, 24):
                return noon if hour == 12 else midnight
            if hour == 0 or hour > 12:
                hour, ap = hour % 12, "a" if hour in (0, 24) else "p"
        if r.digits_stay:
            hour_words, minute_words = str(hour), str(minute)
        else:
            hour_words = r.hour_words.get(hour) or words.cardinal(hour, r.hour_gender)
            minute_words = words.cardinal(minute, r.minute_gender)
        hours = words.amount(r.hour, None, str(hour), None) if r.hour else hour_words
        if minute == 0:
            text = hour_words if ap else r.clock[0].format(hour=hour_words, hours=hours)
        else:
            text = r.clock[1 if minute >= 10 else 2].format(hour=hour_words, hours=hours, minute=minute_words)
        return f"{text} {ap.upper()}M" if ap else text
