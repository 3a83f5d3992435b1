"""The language of requests that name none (Home Assistant's never do), told from the text: for the number rules and
for the model's language id. Accuracy and cost over a larger set: tools/bench_language.py."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from wyoming_chorus.frontend import language
from wyoming_chorus.frontend.language import (
    LANGUAGES,
    choose_language,
    detect_language,
    unspoken_language,
    unspoken_note,
)
from wyoming_chorus.frontend.normalize import normalize

SENTENCES = {
    "en": ["The hallway light is on.", "It is 18.5 °C in the office.", "The back door has been open for 10 minutes.",
           "I turned off the coffee machine."],
    "de": ["Die Terrassentür ist offen.", "Im Büro sind es 18,5 °C.", "Die Hintertür ist seit 10 Minuten offen.",
           "Ich habe die Kaffeemaschine ausgeschaltet."],
    "fr": ["La lumière du couloir est allumée.", "Il fait 18,5 °C dans le bureau.",
           "La porte arrière est ouverte depuis 10 minutes.", "J'ai éteint la machine à café."],
    "es": ["La luz del pasillo está encendida.", "Hay 18,5 °C en la oficina.",
           "La puerta trasera lleva 10 minutos abierta.", "He apagado la cafetera."],
    "it": ["La luce del corridoio è accesa.", "In ufficio ci sono 18,5 °C.",
           "La porta sul retro è aperta da 10 minuti.", "Ho spento la macchina del caffè."],
    "pt": ["A luz do corredor está acesa.", "Estão 18,5 °C no escritório.",
           "A porta dos fundos está aberta há 10 minutos.", "Desliguei a máquina de café."],
    "ru": ["Свет в коридоре включён.", "В кабинете 18,5 °C.", "Задняя дверь открыта уже 10 минут.",
           "Я выключил кофемашину."],
    "zh": ["走廊的灯开着。", "办公室现在18.5°C。"],
    "ja": ["廊下の電気がついています。", "事務所は18.5°Cです。"],
    "ko": ["복도 불이 켜져 있습니다.", "사무실은 18.5°C입니다."],
}


@pytest.mark.parametrize("code, text", [(code, text) for code, texts in SENTENCES.items() for text in texts])
def test_short_home_sentences_are_told_apart(code, text):
    assert detect_language(text, LANGUAGES) == code


@pytest.mark.parametrize("text", ["", "OK", "21.5 °C", "7:30", "100 %", "12,4 kWh", "Timer", "Hallo", "Okay.",
                                  "!!!", "Kitchen: 19.5 °C"])
def test_text_too_short_to_tell_gives_no_language(text):
    assert detect_language(text, LANGUAGES) is None


def test_units_are_no_evidence():
    # Its letters alone ("Kitchen C") read as German; without the unit, one English word is too little to tell.
    assert detect_language("Kitchen: 19.5 °C", LANGUAGES) is None
    assert detect_language("Küche: 19,5 °C", LANGUAGES) == "de"


def test_only_the_candidates_are_answered():
    tiny = ("en", "de", "zh", "fr")  # a voice of four languages
    assert detect_language("La puerta del garaje está abierta.", tiny) is None  # Spanish: not one of them
    assert detect_language("Die Haustür ist abgeschlossen.", ("en_US", "de_DE")) == "de"
    # Languages the model lacks are not taken for the nearest one it has.
    assert detect_language("Het licht in de woonkamer is uit.", LANGUAGES) is None
    assert detect_language("Lampan i vardagsrummet är släckt.", LANGUAGES) is None


def test_the_request_then_the_voice_then_the_text_chooses():
    text = "Es sind 21,5 °C im Wohnzimmer."
    assert choose_language("fr", "de", text, LANGUAGES) == ("fr", False)
    assert choose_language(None, "it", text, LANGUAGES) == ("it", False)
    assert choose_language(None, None, text, LANGUAGES) == ("de", True)
    assert choose_language("auto", None, text, LANGUAGES) == ("de", True)  # "auto" is no language
    assert choose_language("AUTO", "auto", "21.5 °C", LANGUAGES) == (None, False)


def test_german_text_without_a_language_gets_german_numbers():
    """Issue 7: Home Assistant sends no language; the numbers of German text were spelt in English."""
    text = "Es sind 21,5 °C im Wohnzimmer, um 7:30 Uhr."
    code, detected = choose_language(None, None, text, LANGUAGES)
    assert (code, detected) == ("de", True)
    assert normalize(text, code) == ("Es sind einundzwanzig Komma fünf Grad Celsius im Wohnzimmer, "
                                     "um sieben Uhr dreißig.")


def test_the_detector_loads_once_when_threads_race_for_it(monkeypatch):
    loads = []

    class Identifier:
        @classmethod
        def from_model_file(cls, *args, **kwargs):
            loads.append(args)
            time.sleep(0.05)  # long enough for every thread to arrive while the first one loads
            return cls()

        def set_languages(self, codes):
            self.codes = codes

    monkeypatch.setattr(language, "_identifier", None)
    monkeypatch.setattr(language, "LanguageIdentifier", Identifier)
    start = threading.Barrier(8)
    found = []

    def load():
        start.wait()
        found.append(language.load_detector())

    threads = [threading.Thread(target=load) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1 and len(found) == 8 and all(f is found[0] for f in found)


GERMAN = "Es sind 21,5 °C im Wohnzimmer."


@pytest.mark.parametrize("deltas", [[GERMAN], [GERMAN[:2]] + [" " + w for w in GERMAN.split()[1:]]],
                         ids=["one chunk", "word by word"])
async def test_the_server_speaks_german_numbers_for_home_assistants_request(chorus, monkeypatch, deltas):
    """Over the wire as Home Assistant sends it: a stream naming only the voice. Word by word, the first words
    ("Es sind 21,5 °C": two once numbers are left out) do not tell the language: the request waits for more."""
    engine = chorus.service.engine
    built = []
    real_build, real_rows = engine.requests.prompts.build, engine.requests.prompts.text_rows
    monkeypatch.setattr(engine.requests.prompts, "build",
                        lambda text, **kw: built.append((text, kw["language"])) or real_build(text, **kw))
    # Spoken while it is written: the first words start the request, the rest is fed to it as it comes.
    monkeypatch.setattr(engine.requests.prompts, "text_rows", lambda text: built.append(text) or real_rows(text))
    async with AsyncTcpClient("127.0.0.1", chorus.port) as client:
        await client.write_event(SynthesizeStart(voice=SynthesizeVoice(name="ryan")).event())
        for delta in deltas:
            await client.write_event(SynthesizeChunk(delta).event())
            await asyncio.sleep(0.05)
        await client.write_event(SynthesizeStop().event())

        async def until_stopped():
            while (event := await client.read_event()) is not None and event.type != "synthesize-stopped":
                pass

        await asyncio.wait_for(until_stopped(), 60)
    (first, language), *rest = built
    assert language == "german"
    assert first + "".join(rest) == "Es sind einundzwanzig Komma fünf Grad Celsius im Wohnzimmer."


def test_a_language_the_voice_does_not_speak_is_named_for_the_warning():
    assert unspoken_language("Het licht in de woonkamer is uit.", LANGUAGES) == "nl"
    assert unspoken_language("Lampan i vardagsrummet är släckt.", LANGUAGES) == "sv"
    assert unspoken_language("Die Haustür ist abgeschlossen.", LANGUAGES) is None  # spoken
    assert unspoken_language("OK", LANGUAGES) is None  # not told
    assert unspoken_language("La puerta del garaje está abierta.", ("en", "de")) == "es"
    assert unspoken_note("pl") == ("Polish (pl), which the model does not speak: spoken anyway, its numbers and units "
                                   "left as written")
