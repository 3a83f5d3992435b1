"""The engine: one language's Rules compiled into regular expressions, applied from the most specific to the least
(dates and times: calendar.py; then money, ordinals, quantities with units, units after "per", then plain numbers).
Numbers are said through words.py.

Never raises, and every pattern runs in time linear in the text (no start inside a word or a digit group can rescan
what an earlier start already failed on), so that no text breaks a reply off mid-way.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from wyoming_chorus.frontend.normalize.calendar import Calendar, Pass
from wyoming_chorus.frontend.normalize.rules import ALIASES, CURRENCY_CODES, Noun, Rules
from wyoming_chorus.frontend.normalize.words import NumberWords, text_after, word_before

_ONLY_SPACE = re.compile(r"\s*\Z")
# The word before the number before a conjunction, with its noun ("seit 1 Stunde und") or without ("до 5 и")
_CARRIED = (re.compile(r"(?<!\w)(\w+)\s+\S+\s+\S+\s+\w+\s*\Z"), re.compile(r"(?<!\w)(\w+)\s+\S+\s+\w+\s*\Z"))


class Speller:
    def __init__(self, rules: Rules):
        self.rules = r = rules
        self.words = NumberWords(rules)
        self._units = {**{alias: r.units[unit] for alias, unit in ALIASES.items() if unit in r.units}, **r.units}
        # The nouns written out ("1 Stunde", "21 minutos"): the number agrees with them, the word stays as written.
        self._nouns = {form: noun for noun in [*r.units.values(), *([r.hour] if r.hour else [])]
                       for form in noun.forms if "{n}" not in form and form not in self._units}
        # A group chain never starts right after a digit and a separator: a chain that failed to match from its first
        # group is not retried from each later one (quadratic in "1,111,111,...").
        g = re.escape(r.group)
        group = rf"(?<!\d{g})[1-9]\d{{0,2}}(?:{g}\d{{3}})+(?!\d)|" if r.group else ""
        # Not after a letter: "MP3" and "H2O" are names, not numbers. "@" stands for a group-name suffix. CJK text
        # writes numbers right after its own letters ("最低-3"): there, only Latin letters make a name.
        letter, word = (r"[A-Za-z]", r"A-Za-z0-9_") if r.digits_stay else (r"[^\W\d_]", r"\w")
        digits = rf"(?P<int@>{group}\d+)(?:{r.decimal}(?P<frac@>\d+))?"
        number = rf"(?<!{letter})(?<!\d){digits}"
        signed = rf"(?P<sign@>(?<![{word}.,)])[-−])?" + number
        end = rf"(?![{word}])"  # a unit's or a currency's end
        symbols = "|".join(re.escape(u) for u in sorted(self._units, key=len, reverse=True))
        units = "|".join(re.escape(u) for u in sorted([*self._units, *self._nouns], key=len, reverse=True))
        months = {name.casefold(): i for i, name in enumerate(r.months)}
        self.passes: list[Pass] = Calendar(self.words, months).passes()

        def add(pattern: str, replace: Callable[[re.Match], str]) -> None:
            self.passes.append((re.compile(pattern), replace))

        if r.money:
            money = "|".join(re.escape(s) for s in [*r.money, *(c for c, s in CURRENCY_CODES.items() if s in r.money)])
            per = rf"(?:/(?P<per@>{symbols}){end})?" if r.per else ""
            add(rf"(?P<cur>{money})\s?(?<!\d){digits.replace('@', '')}{per.replace('@', '')}"  # "CHF5" too
                rf"|{signed.replace('@', '2')}\s?(?P<cur2>{money}){end}{per.replace('@', '2')}", self._money)
        if r.year_nouns:  # "в 2026 году": a year before its noun is an ordinal
            nouns = "|".join(re.escape(noun) for noun in r.year_nouns)
            add(rf"(?<![\w.,])(?P<n>[12]\d{{3}})\s(?P<noun>{nouns})(?!\w)", self._year_ordinal)
        if r.ordinals:  # before quantities: Italian "il 1° piano" is the first floor, "1° fuori" one degree
            suffixes = "|".join(re.escape(s) for s in sorted(r.ordinals, key=len, reverse=True))
            add(rf"(?<![\w.,])(?P<n>\d+)(?P<suffix>{suffixes})(?!\w)", self._ordinal)
        start = rf"(?:{signed.replace('@', '0')}\s?[-–]\s?)?" if r.range else ""
        add(rf"{start}{signed.replace('@', '')}\s?(?P<unit>{units}){end}", self._quantity)
        if r.per and not r.digits_stay:
            # A unit with no number: "per kWh", and after a word ("32 Cent/kWh", "руб./кВт·ч"), not inside a
            # symbol ("km/h" stays whole) nor an elided article ("par l'entrée")
            per_word = re.escape(r.per)
            add(rf"(?<!\w)(?:(?P<per>{per_word})\s|(?P<word>[^\W\d_]+\.?)/)(?P<unit>{symbols}){end}(?!['’])",
                self._per_unit)
        if r.digits_stay:  # a unit with no number, in text of another script: "每kWh"; not "A级" (one letter)
            bare = "|".join(re.escape(u) for u in sorted(self._units, key=len, reverse=True) if len(u) > 1)
            add(rf"(?<![A-Za-z0-9_/.,])(?P<unit>{bare})(?![A-Za-z0-9_])", lambda m: self._unit_name(m["unit"]))
        else:
            # Tokens with a letter ("v1.2", "MP3") are names: matched whole, so that none of their digits is read.
            # Only from a word's start, and possessively: each word is scanned once, not once from each of its letters.
            add(r"(?P<name>(?<!\w)[\d_]*+[^\W\d_]\w*+(?:[.,]\d+)+)|" + signed.replace("@", ""), self._plain_number)

    def spell(self, text: str) -> str:
        text = text.replace("\u00a0", " ").replace("\u202f", " ")  # no-break spaces around units and groups
        for pattern, replace in self.passes:
            text = pattern.sub(replace, text)
        return re.sub(r"[ \t]{2,}", " ", text)

    def _case(self, m: re.Match) -> str:
        """The case the word before a number asks of it ("in einer Stunde"), carried across a conjunction after one
        number and its noun ("seit einer Stunde und einer Minute"): "" for none."""
        r = self.rules
        before = word_before(m)
        if before in r.case_carriers:
            for carried in _CARRIED:
                earlier = carried.search(m.string, max(0, m.start() - 64), m.start())
                if earlier and earlier[1].lower() in r.case_after:
                    return r.case_after[earlier[1].lower()]
        return r.case_after.get(before, "")

    # ---- the passes ----------------------------------------------------------------------------------------------
    def _plain_number(self, m: re.Match) -> str:
        if m["name"]:
            return m["name"]
        r = self.rules
        gender = case = ""
        if r.gender_after or r.case_after:  # "a las 21": hours, "veintiuna"; "in einer Stunde"
            before = word_before(m)
            gender, case = r.gender_after.get(before, ""), self._case(m)
        if not gender and r.gender_of and m["frac"] is None:  # "ein Fenster", "un mensaje": the noun it counts
            gender, _, told_case = r.gender_of(self.words.plain(m["int"]), text_after(m)).partition(" ")
            case = told_case or case
        words = self.words.number(m["sign"], m["int"], m["frac"], gender, case)
        glued = m.end() < len(m.string) and m.string[m.end()].isalpha()
        return words + " " if glued else words  # "3D" -> "three D"

    def _quantity(self, m: re.Match) -> str:
        r, words = self.rules, self.words
        word = m["unit"] if m["unit"] in self._nouns else None
        noun = self._nouns[word] if word else self._units[m["unit"]]
        if word:  # only the number changes: the writer chose the word's form (and case)
            noun = Noun((word,), noun.gender, noun.one if word == noun.forms[0] else None, noun.minus)
        if m.groupdict().get("int0") is None:
            return words.amount(noun, m["sign"], m["int"], m["frac"], self._case(m))
        fractional = m["frac0"] is not None or m["frac"] is not None
        template, case = (r.range_fraction, "") if fractional and r.range_fraction else (r.range, r.range_case)
        low = words.number(m["sign0"], m["int0"], m["frac0"], noun.gender, case, noun.minus)
        high = words.number(m["sign"], m["int"], m["frac"], noun.gender, case, noun.minus)
        return words.with_noun(noun, template.format(low=low, high=high), words.plain(m["int"]), m["frac"] is not None,
                               case)

    def _money(self, m: re.Match) -> str:
        r, words = self.rules, self.words
        symbol = m["cur"] or m["cur2"]
        major, minor = r.money[CURRENCY_CODES.get(symbol, symbol)]
        first = m["cur"] is not None
        sign, whole, frac = (None, m["int"], m["frac"]) if first else (m["sign2"], m["int2"], m["frac2"])
        digits = words.plain(whole)
        case = self._case(m)  # "für einen Euro"
        # Not cents ("3.505 €" is a measured amount), or more than words can say: as a quantity, digit by digit.
        if r.digits_stay or (frac is not None and len(frac) > 2) or not words.says(digits):
            text = words.amount(major, sign, whole, frac, case)
        else:
            cents = int((frac or "0").ljust(2, "0"))
            parts = [words.count(major, int(digits), case)] if int(digits) or not cents else []
            if cents:
                parts.append(words.count(minor, cents, case))
            text = (r.minus if sign else "") + r.conjunction.join(parts)
        per = m.groupdict().get("per" if first else "per2")
        return r.price.format(amount=text, per=r.per, unit=self._unit_name(per)) if per else text

    def _unit_name(self, symbol: str) -> str:
        """A unit's name, said with no number before it ("per kilowatt hour", "每千瓦时"); the symbol itself where the
        number stands inside the name ("每小时{n}公里")."""
        before, _, after = self._units[symbol].forms[0].partition("{n}")
        return symbol if before and after else before + after

    def _per_unit(self, m: re.Match) -> str:
        word = m["word"]
        if word is not None and f"{word}/{m['unit']}" in self._units:
            return m[0]  # a symbol of its own ("km/h" read without its number)
        return f"{word or ''} {self.rules.per} {self._unit_name(m['unit'])}".lstrip()

    def _ordinal(self, m: re.Match) -> str:
        r = self.rules
        if not self.words.says(m["n"], "ordinal"):
            return m[0]  # the plain-number rule reads its digits one by one ("nine nine ... th")
        tag = r.ordinals[m["suffix"]]
        if r.ordinal_context is not None:
            in_context = r.ordinal_context(tag, m.string[max(0, m.start() - 64):m.start()], text_after(m))
            if in_context is None:
                return m[0]
            tag = in_context
        words = self.words.ordinal(int(m["n"]), tag)
        if m["suffix"] == "." and _ONLY_SPACE.match(m.string, m.end()):
            return words + "."  # "Heute ist der dritte.": the ordinal's dot also ended the sentence
        return words

    def _year_ordinal(self, m: re.Match) -> str:
        return f"{self.words.ordinal(int(m['n']), self.rules.year_nouns[m['noun']])} {m['noun']}"
