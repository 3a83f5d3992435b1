"""Household sentences in the Qwen3-TTS languages: what a compressed model is calibrated on and checked against.

The first sentence of each language calibrates the compression, the second is held out for the check (a model is
never judged on the sentences it was fitted to). They are the kind of replies a home assistant speaks.
"""
from __future__ import annotations

from collections.abc import Iterable

SENTENCES: dict[str, tuple[str, str]] = {
    "english": ("The kitchen lights are on and the front door is locked.",
                "It is twenty one degrees in the living room, and the washing machine has finished."),
    "german": ("Das Licht in der Küche ist an und die Haustür ist abgeschlossen.",
               "Im Wohnzimmer sind es einundzwanzig Grad, und die Waschmaschine ist fertig."),
    "french": ("La lumière de la cuisine est allumée et la porte d'entrée est fermée.",
               "Il fait vingt et un degrés dans le salon, et la machine à laver a terminé."),
    "spanish": ("Las luces de la cocina están encendidas y la puerta principal está cerrada.",
                "Hace veintiún grados en el salón y la lavadora ha terminado."),
    "italian": ("Le luci della cucina sono accese e la porta d'ingresso è chiusa.",
                "In soggiorno ci sono ventuno gradi e la lavatrice ha finito."),
    "portuguese": ("As luzes da cozinha estão acesas e a porta da frente está trancada.",
                   "Estão vinte e um graus na sala, e a máquina de lavar terminou."),
    "russian": ("Свет на кухне включён, входная дверь заперта.",
                "В гостиной двадцать один градус, стиральная машина закончила."),
    "chinese": ("厨房的灯开着，前门已经锁好了。", "客厅现在二十一度，洗衣机已经洗完了。"),
    "japanese": ("キッチンの電気がついていて、玄関の鍵はかかっています。",
                 "リビングは二十一度で、洗濯機が終わりました。"),
    "korean": ("주방 불이 켜져 있고 현관문은 잠겨 있습니다.", "거실은 이십일 도이고, 세탁기가 끝났습니다."),
}


def household_prompts(languages: Iterable[str], held_out: bool) -> list[tuple[str, str]]:
    """(language, sentence) for each of the model's `languages` that has sentences here (English if none has):
    the calibration sentence, or with `held_out` the one kept for the check."""
    known = [language for language in languages if language in SENTENCES] or ["english"]
    return [(language, SENTENCES[language][int(held_out)]) for language in known]
