"""Workloads for tools/bench.py: deterministic English texts, and the scenarios (a burst of N rooms, Poisson arrivals,
one short announcement against rooms that read long texts) sent with chorus_tools.client.

Every request talks to the server with the real `wyoming` library, one connection per request as Home Assistant
does. Every wait is bounded by a timeout; a failed request is recorded (its error kept), never raised.
"""
from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from chorus_tools.bench.listener import HA_2026_11
from chorus_tools.client import Reply, Stream, speak, tcp_uri

# ---- texts ----------------------------------------------------------------------------------------------------------

# Plain words only: no digits or abbreviations, so the server's normaliser leaves the word count alone (a random
# model's reply ends after engine.benchmark_frames_per_word frames per word) and the language detector says English.
_WORDS = (
    "the kitchen lights are on and the garden door is still open while a gentle rain falls over the quiet street "
    "your coffee will be ready soon please remember to take an umbrella because the evening looks cold and windy "
    "someone rang the front bell this morning the washing machine has finished its long cycle and the bedroom "
    "window should be closed before night the living room feels warm the heating will switch off after dinner "
    "tomorrow brings sunshine with light clouds in the afternoon and a mild breeze from the west across the hills "
    "there is a parcel waiting at the neighbour house the dog needs a walk the music in the office is too loud"
).split()

KINDS = ("announce", "assistant", "readout")
# Words per text, and per sentence, of each kind.
_LENGTHS = {"announce": ((5, 15), (5, 15)), "assistant": ((30, 60), (8, 16)), "readout": ((200, 230), (10, 18))}


def sentence(rng: random.Random, words: int) -> str:
    chosen = [rng.choice(_WORDS) for _ in range(words)]
    return " ".join([chosen[0].capitalize(), *chosen[1:]]) + "."


def make_text(kind: str, rng: random.Random, min_words: int | None = None) -> str:
    """A text of `kind`: announcements 5-15 words (one sentence), assistant replies 30-60 words, read-outs 200+."""
    (low, high), (s_low, s_high) = _LENGTHS[kind]
    total = rng.randint(max(low, min_words or 0), max(high, min_words or 0))
    sentences, left = [], total
    while left > 0:
        n = min(left, rng.randint(s_low, s_high))
        if 0 < left - n < s_low:  # no runt sentence at the end
            n = left
        sentences.append(sentence(rng, n))
        left -= n
    return " ".join(sentences)


def word_count(text: str) -> int:
    return len(text.split())


@dataclass(frozen=True)
class Spec:
    """One request: what a room says and how it sends it."""
    kind: str
    mode: str  # "stream" (synthesize-start / chunks / stop) or "oneshot" (synthesize)
    text: str
    arrival_s: float = 0.0  # after the scenario's start
    room: int = 0


def mode_for(kind: str, policy: str) -> str:
    """`ha`: as Home Assistant sends them: an assistant's reply is streamed from the LLM, the rest are one-shot."""
    if policy in ("stream", "oneshot"):
        return policy
    return "stream" if kind == "assistant" else "oneshot"


# The mixed burst: which kind the i-th room speaks (so N rooms always hold the same mix, read-outs from 8 rooms on).
MIX_CYCLE = ("assistant", "announce", "announce", "assistant", "announce", "assistant", "announce", "readout")


def burst_specs(rooms: int, seed: int, mode_policy: str, readout_words: int) -> list[Spec]:
    rng = random.Random(seed * 1000 + rooms)
    specs = []
    for room in range(rooms):
        kind = MIX_CYCLE[room % len(MIX_CYCLE)]
        specs.append(Spec(kind, mode_for(kind, mode_policy), make_text(kind, rng, readout_words if kind == "readout"
                                                                          else None), 0.0, room))
    return specs


def poisson_specs(count: int, rate: float, weights: dict[str, float], seed: int, mode_policy: str,
                  readout_words: int) -> list[Spec]:
    """`count` requests with exponential gaps of mean 1/rate; kinds drawn by `weights` (at least one of each kind with
    a weight, so a short run still holds the mix)."""
    rng = random.Random(seed)
    kinds = [k for k in KINDS if weights.get(k, 0) > 0]
    drawn = kinds + rng.choices(kinds, [weights[k] for k in kinds], k=max(0, count - len(kinds)))
    rng.shuffle(drawn)
    t, specs = 0.0, []
    for i, kind in enumerate(drawn[:count]):
        specs.append(Spec(kind, mode_for(kind, mode_policy),
                          make_text(kind, rng, readout_words if kind == "readout" else None), round(t, 3), i))
        t += rng.expovariate(rate)
    return specs


# ---- one request -----------------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str
    mode: str
    room: int
    words: int
    start_s: float  # since the scenario began: when the first text was sent
    ttfa_s: float | None = None  # first audio chunk after start
    end_s: float | None = None
    audio_s: float = 0.0
    # What a listener hears through Home Assistant 2026.11 (chorus_tools/bench/listener.py): its first sound after
    # start, the times and seconds it ran out of audio, and whether a satellite gave up before the first sound.
    first_sound_s: float | None = None
    underruns: int = 0
    underrun_s: float = 0.0
    gave_up: bool = False
    error: str | None = None
    cut: bool = False  # stopped by the benchmark before its end (a read-out that outlived the others, a probe)

    @property
    def complete(self) -> bool:
        return self.error is None and not self.cut and self.end_s is not None

    @property
    def gap_free(self) -> bool:
        """Its listener heard it from the first sound to where it ended (or was cut) with no gap, and no satellite
        gave up on it."""
        return self.error is None and self.first_sound_s is not None and not self.gave_up and self.underruns == 0

    @property
    def rtf(self) -> float | None:
        """Generation wall time / seconds of audio (a cut request: over the part it ran)."""
        if self.end_s is None or self.audio_s <= 0 or self.error is not None:
            return None
        return (self.end_s - self.start_s) / self.audio_s


async def request(port: int, spec: Spec, began: float, outcome: Outcome, client: ClientSettings,
                  first_audio: asyncio.Event | None = None, reply: Reply | None = None) -> Outcome:
    """One reply on its own connection, recorded into `outcome` (a cancelled request keeps what it got); `reply`: to
    watch it while it runs."""
    stream = Stream.even(spec.text, client.delta_chars, client.delta_s) if spec.mode == "stream" else None
    reply = reply if reply is not None else Reply()
    try:
        await speak(tcp_uri(port), spec.text, stream, reply=reply, timeout=client.timeout,
                    first_audio=first_audio)
    except asyncio.CancelledError:
        outcome.cut = True
        raise
    finally:
        if reply.started is not None:
            outcome.start_s = reply.started - began
        outcome.ttfa_s = reply.first_audio_s
        outcome.audio_s = reply.audio_s
        heard = HA_2026_11.hear(reply.started, reply.chunks)
        outcome.first_sound_s, outcome.gave_up = heard.first_sound_s, heard.gave_up
        outcome.underruns, outcome.underrun_s = heard.underruns, heard.underrun_s
        outcome.error = outcome.error or reply.error
        outcome.end_s = (reply.ended or time.monotonic()) - began
        outcome.cut = outcome.cut or reply.hung_up
    return outcome


# ---- scenarios -------------------------------------------------------------------------------------------------------

@dataclass
class ClientSettings:
    timeout: float  # per request
    delta_chars: int = 7
    delta_s: float = 0.02
    cut_readouts: bool = True  # stop read-outs once every other request has finished


@dataclass
class Scenario:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)
    wall_s: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"name": self.name, "wall_s": self.wall_s, "extra": self.extra,
                "outcomes": [{**asdict(o), "rtf": o.rtf} for o in self.outcomes]}


def _outcome(spec: Spec, began: float) -> Outcome:
    return Outcome(spec.kind, spec.mode, spec.room, word_count(spec.text), time.monotonic() - began)


async def run_specs(name: str, port: int, specs: list[Spec], client: ClientSettings) -> Scenario:
    """Each request starts at its arrival time. Read-outs still running when all the others have ended are cut (with
    cut_readouts): they have loaded the batch all along, and running them to their end would take minutes per run."""
    began = time.monotonic()
    scenario = Scenario(name)

    async def arrive(spec: Spec, outcome: Outcome) -> None:
        await asyncio.sleep(max(0.0, spec.arrival_s - (time.monotonic() - began)))
        await request(port, spec, began, outcome, client)

    tasks = []
    for spec in specs:
        outcome = _outcome(spec, began)
        scenario.outcomes.append(outcome)
        tasks.append((spec, asyncio.create_task(arrive(spec, outcome))))
    finite = [t for s, t in tasks if not (client.cut_readouts and s.kind == "readout")]
    long_ones = [t for s, t in tasks if client.cut_readouts and s.kind == "readout"]
    limit = client.timeout + max((s.arrival_s for s in specs), default=0.0) + 5
    if finite:
        await asyncio.wait(finite, timeout=limit)
    else:
        await asyncio.wait(long_ones, timeout=limit)
    for task in [t for _, t in tasks if not t.done()]:
        task.cancel()
    await asyncio.gather(*(t for _, t in tasks), return_exceptions=True)
    scenario.wall_s = time.monotonic() - began
    return scenario


# Audio each reader has written before the "playing" probes: every reader is well into its reply, heard.
PLAYING_SECONDS = 5.0


async def contention(port: int, readers: int, probes: int, seed: int, readout_words: int,
                     client: ClientSettings) -> Scenario:
    """A short announcement, heard to its end (first sound, gaps), alone (`probes` times, one after another), then
    twice while `readers` rooms read long texts: once every reader has heard its first audio ("reading": all of them
    are in the batch, just started, each listener as sensitive to a gap as the announcement's), and once every reader
    has written `PLAYING_SECONDS` of audio ("playing": a household listening to read-outs when the doorbell rings).
    Each probe runs to its end; the readers are cut after the last probe."""
    rng = random.Random(seed)
    probe_texts = [make_text("announce", rng) for _ in range(probes)]
    began = time.monotonic()
    scenario = Scenario("contention", extra={"readers": readers})

    async def probe_round(label: str) -> list[Outcome]:
        done = []
        for text in probe_texts:
            spec = Spec("announce", "oneshot", text, room=-1)
            outcome = _outcome(spec, began)
            outcome.kind = f"announce ({label})"
            await request(port, spec, began, outcome, client)
            done.append(outcome)
        return done

    scenario.outcomes += await probe_round("alone")
    heard = [asyncio.Event() for _ in range(readers)]
    reader_tasks = []
    replies = [Reply() for _ in range(readers)]
    for n in range(readers):
        spec = Spec("readout", "oneshot", make_text("readout", rng, readout_words), room=n)
        outcome = _outcome(spec, began)
        scenario.outcomes.append(outcome)
        reader_tasks.append(asyncio.create_task(request(port, spec, began, outcome, client, first_audio=heard[n],
                                                        reply=replies[n])))
    try:
        waits = [asyncio.create_task(e.wait()) for e in heard]
        _, pending = await asyncio.wait(waits, timeout=client.timeout)
        for task in pending:
            task.cancel()
        scenario.extra["readers_heard"] = sum(e.is_set() for e in heard)
        scenario.outcomes += await probe_round(f"{readers} reading")
        deadline = time.monotonic() + client.timeout
        while (time.monotonic() < deadline and not all(r.ended for r in replies)
               and min(r.audio_s for r in replies) < PLAYING_SECONDS):
            await asyncio.sleep(0.1)
        scenario.extra["readers_playing"] = sum(r.audio_s >= PLAYING_SECONDS and not r.ended for r in replies)
        scenario.outcomes += await probe_round(f"{readers} playing")
    finally:
        for task in reader_tasks:
            task.cancel()
        await asyncio.gather(*reader_tasks, return_exceptions=True)
    scenario.wall_s = time.monotonic() - began
    return scenario


# ---- summaries -------------------------------------------------------------------------------------------------------

async def sample_metrics(scrape: Callable, every: float, into: dict, stop: asyncio.Event) -> None:
    """Peak KV blocks used and peak running/waiting sentences while a scenario runs (the gauges are instantaneous)."""
    while not stop.is_set():
        with contextlib.suppress(OSError, TimeoutError, RuntimeError, ValueError, IndexError):
            values = await scrape()
            for key in ("chorus_kv_blocks_used", "chorus_requests_running", "chorus_requests_waiting"):
                into[key] = max(into.get(key, 0.0), values.get(key, 0.0))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
