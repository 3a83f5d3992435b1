"""The fuzzer's cases: valid, odd and mutated Wyoming events, garbage, and how each case ends. A case is made from
(seed, index) alone, so any one can be replayed."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from wyoming_chorus.config import ServerSettings
from wyoming_chorus.wyoming.event_reader import MAX_HEADER_BYTES

VERSION = "1.10.2"

TEXTS = ["Hi.", "Hi there.", "Bye now. See you soon.", "Good morning! It is 21.5 °C.", "Ä ö ü ß, 😀 and 漢字.",
         "line\nbreak", "tab\tand\rreturn", "", "   ", "\u0000", "\ud800 lone surrogate", "9" * 400,
         "x" * 5000, "word " * 120, "Dr. Smith paid $3.50 at 7:30 a.m. on 2024-01-02."]
ODD_DATA = [None, "Hi there.", ["Hi."], 42, -1.5, True, {}]
VOICES = [None, {"name": "ryan"}, {"name": "serena", "speaker": None}, {"name": "no-such-voice"}, {"language": "de"},
          {"name": None, "language": None, "speaker": None}, "ryan", ["ryan"], 7, {"name": 5}, {"speaker": []}]
ENDINGS = ["read"] * 12 + ["close"] * 3 + ["reset"] * 2 + ["cut"] * 2 + ["leave"]
ABSENT = object()


@dataclass
class Case:
    index: int
    kind: str
    frames: list[bytes]  # what is sent, one item per event as it was made (mutated ones included)
    ending: str  # read | close | reset | cut | leave
    cut_at: float  # for "cut": the fraction of the bytes sent; for "leave": how many events are read
    pieces: int  # the bytes are written in this many pieces

    def data(self) -> bytes:
        return b"".join(self.frames)


def encode(event_type: str, data: Any = ABSENT, payload: bytes | None = None, *, inline: bool = False,
           extra: dict | None = None, ascii_only: bool = False) -> bytes:
    """An event as wyoming writes it (data after the header line), or with the data inside the header."""
    header: dict[str, Any] = {"type": event_type, "version": VERSION, **(extra or {})}
    body = b""
    if data is not ABSENT:
        if inline:
            header["data"] = data
        else:
            body = _dumps(data, ascii_only)
            header["data_length"] = len(body)
    if payload:
        header["payload_length"] = len(payload)
    return _dumps(header, ascii_only) + b"\n" + body + (payload or b"")


def _dumps(value: Any, ascii_only: bool) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=ascii_only).encode()
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be sent
        return json.dumps(value).encode()


def synthesize(rng: random.Random, text: str | None = None) -> bytes:
    data: dict[str, Any] = {"text": rng.choice(TEXTS[:7]) if text is None else text}
    if (voice := rng.choice(VOICES[:6])) is not None or rng.random() < 0.3:
        data["voice"] = voice
    return encode("synthesize", data, ascii_only=rng.random() < 0.5)


def stream(rng: random.Random, text: str | None = None, voice: Any = None) -> list[bytes]:
    text = rng.choice(TEXTS[:7]) if text is None else text
    frames = [encode("synthesize-start", {} if voice is None else {"voice": voice})]
    cuts = sorted(rng.sample(range(1, max(len(text), 2)), min(rng.randint(0, 4), max(len(text) - 1, 0))))
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        frames.append(encode("synthesize-chunk", {"text": text[start:end]}))
    if rng.random() < 0.5:  # Home Assistant's copy for servers that cannot stream: ignored inside a stream
        frames.append(encode("synthesize", {"text": text}))
    frames.append(encode("synthesize-stop"))
    return frames


def valid_events(rng: random.Random) -> list[bytes]:
    frames: list[bytes] = []
    for _ in range(rng.randint(1, 3)):
        choice = rng.random()
        if choice < 0.3:
            frames.append(encode("describe"))
        elif choice < 0.6:
            frames.append(synthesize(rng))
        elif choice < 0.85:
            frames += stream(rng, voice=rng.choice(VOICES[:6]))
        elif choice < 0.93:
            frames.append(encode(rng.choice(["ping", "transcribe", "audio-start", "x" * 300]), {"x": 1}))
        else:
            frames.append(encode("audio-chunk", {"rate": 16000, "width": 2, "channels": 1},
                                 rng.randbytes(rng.randint(1, 4000))))
    return frames


def odd_events(rng: random.Random) -> list[bytes]:
    """Events that are read without fault but make no sense, or ask too much."""
    choice = rng.randrange(12)
    if choice == 0:
        return [encode(rng.choice(["synthesize", "synthesize-start", "synthesize-chunk"]), rng.choice(ODD_DATA),
                       inline=rng.random() < 0.5)]
    if choice == 1:
        return [encode("synthesize", {"text": rng.choice(ODD_DATA)})]
    if choice == 2:
        return [encode("synthesize", {"text": "Hi.", "voice": rng.choice(VOICES)})]
    if choice == 3:
        return [encode(rng.choice(["synthesize-chunk", "synthesize-stop"]), {"text": "stray"})]
    if choice == 4:
        return [encode("synthesize-start"), encode("synthesize-start"), encode("synthesize-chunk", {"text": "Hi."}),
                encode("synthesize-stop")]
    if choice == 5:
        return [synthesize(rng, rng.choice(TEXTS))]
    if choice == 6:
        return stream(rng, rng.choice(TEXTS), voice=rng.choice(VOICES))
    if choice == 7:  # a stream with a chunk of the wrong shape
        frames = stream(rng, "Hi there.")
        frames.insert(rng.randint(1, len(frames) - 1), encode("synthesize-chunk", rng.choice(ODD_DATA),
                                                              inline=rng.random() < 0.5))
        return frames
    if choice == 8:  # more requests than one connection may queue
        return [synthesize(rng, "Hi.") for _ in range(rng.randint(5, 30))]
    if choice == 9:
        return [encode(rng.choice(["synthesize", "describe"]), {"text": "Hi."},
                       inline=True, extra={rng.choice(["junk", "data_len", "Type"]): rng.choice(ODD_DATA)})]
    if choice == 10:  # data in the header and after it
        body = b'{"text": "Hi."}'
        header = {"type": "synthesize", "data": rng.choice(ODD_DATA), "data_length": len(body)}
        return [json.dumps(header).encode() + b"\n" + body]
    return [encode("synthesize", {"text": "Hi."}, rng.randbytes(rng.randint(1, 3000)))]  # a payload nobody wants


HEADER_VALUES = [None, True, False, 0, -1, 1.5, 2**40, 2**63, 10**30, "5", "", [], [1], {}, {"a": 1},
                 float("inf"), float("nan"), 1e30]


def mutated_header(rng: random.Random, limits: ServerSettings) -> list[bytes]:
    frame = rng.choice([encode("describe"), encode("synthesize", {"text": "Hi."}),
                        encode("audio-chunk", {"rate": 1}, b"\x00" * 10)])
    line, rest = frame.split(b"\n", 1)
    header = json.loads(line)
    key = rng.choice(["type", "version", "data", "data_length", "payload_length", "junk"])
    choice = rng.random()
    if choice < 0.15:
        header.pop(key, None)
    elif choice < 0.7:
        header[key] = rng.choice(HEADER_VALUES)
    elif choice < 0.8:
        header[key] = rng.choice([limits.max_event_bytes, limits.max_event_bytes + 1, len(rest), len(rest) + 1,
                                  max(len(rest) - 1, 0)])
    else:  # nested: spliced in as text (json.dumps could not write the deepest)
        header[key] = "NESTED"
        depth = rng.choice([10, 100, 999, 1000, 5000])
        text = json.dumps(header).replace('"NESTED"', "[" * depth + "]" * depth)
        return [text.encode() + b"\n" + rest]
    text = json.dumps(header)
    return [text.encode() + b"\n" + rest] + ([encode("describe")] if rng.random() < 0.5 else [])


def mutated_bytes(rng: random.Random) -> list[bytes]:
    frames = valid_events(rng)
    data = bytearray(b"".join(frames))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        choice = rng.randrange(7)
        if choice == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            data[at:at] = rng.randbytes(rng.randint(1, 20))
        elif choice == 2:
            del data[at:at + rng.randint(1, 20)]
        elif choice == 3:
            data[at:at] = data[max(at - 40, 0):at]
        elif choice == 4:
            data[at:at] = rng.choice([b"\n", b"\r\n", b"\x00", b"{", b'"', b"\\"])
        elif choice == 5:
            data = data.replace(b"\n", b"\r\n", 1)
        else:
            digits = [i for i, byte in enumerate(data) if 48 <= byte <= 57]
            if digits:
                data[rng.choice(digits)] = rng.randint(48, 57)
    return [bytes(data)]


def garbage(rng: random.Random) -> list[bytes]:
    choice = rng.randrange(7)
    if choice == 0:
        return [rng.randbytes(rng.randint(1, 2000))]
    if choice == 1:
        return [json.dumps(rng.choice([5, None, "describe", ["describe"], {}, 1.5, True])).encode() + b"\n"]
    if choice == 2:
        depth = rng.choice([50, 999, 1000, 3000])
        return [b"[" * depth + b"]" * depth + b"\n"]
    if choice == 3:
        return [b"\n" * rng.randint(1, 5) + encode("describe")]
    if choice == 4:  # a header line over the limit, with or without its end
        return [b'{"type": "describe", "x": "' + b"y" * (MAX_HEADER_BYTES + 10) + rng.choice([b'"}\n', b""])]
    if choice == 5:
        return [encode("describe")[:-1] + rng.randbytes(rng.randint(1, 50)) + b"\n"]
    return [b'{"type": "synthesize", "data_length": 10}\n' + b"\xff" * 10]


KINDS = {"valid": (valid_events, 25), "odd": (odd_events, 25), "header": (mutated_header, 20),
         "bytes": (mutated_bytes, 20), "garbage": (garbage, 10)}


def make_case(seed: int, index: int, limits: ServerSettings) -> Case:
    rng = random.Random(f"{seed}:{index}")
    kind = rng.choices(list(KINDS), weights=[w for _, w in KINDS.values()])[0]
    make = KINDS[kind][0]
    frames = make(rng, limits) if make is mutated_header else make(rng)
    return Case(index, kind, frames, rng.choice(ENDINGS), rng.random(), rng.randint(1, 4))
