"""Identical concurrent requests share one generation (engine.share_identical), over real TCP against the real
engine (tiny model): a multi-room announcement made once, heard in every room byte for byte."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize

from helpers import HOST, TIMEOUT, audio, read_until

pytestmark = pytest.mark.asyncio

ANNOUNCEMENT = "Dinner is ready, everybody please come down to the kitchen now"  # one sentence, whatever follows


def counter(chorus, name: str) -> float:
    families = {f.name: f for f in chorus.service.metrics.registry.collect()}
    return sum(s.value for s in families[name].samples if s.name.endswith("_total"))


def batch_buckets(chorus) -> dict[str, float]:
    """Steps so far by chorus_batch_size bucket bound ("1.0": steps of one request; "+Inf": all steps)."""
    return {s.labels["le"]: s.value for f in chorus.service.metrics.registry.collect() if f.name == "chorus_batch_size"
            for s in f.samples if s.name.endswith("_bucket")}


async def one_room(port: int, text: str, leave_after: int | None = None) -> bytes:
    async with AsyncTcpClient(HOST, port) as client:
        await client.write_event(Synthesize(text).event())
        if leave_after is None:
            return audio(await read_until(client, "audio-stop"))
        events = []
        while len([e for e in events if e.type == "audio-chunk"]) < leave_after:
            events.append(await asyncio.wait_for(client.read_event(), TIMEOUT))
        return b"".join(e.payload or b"" for e in events if e.type == "audio-chunk")  # and it leaves mid-reply


async def test_eight_identical_requests_use_one_batch_place_and_get_the_same_audio(chorus):
    text = ANNOUNCEMENT + ", eight rooms."
    shared_before = counter(chorus, "chorus_shared_requests")
    steps_before = batch_buckets(chorus)
    rooms = await asyncio.gather(*(one_room(chorus.port, text) for _ in range(8)))
    assert counter(chorus, "chorus_shared_requests") - shared_before == 7
    assert len(rooms[0]) > 0 and all(pcm == rooms[0] for pcm in rooms)
    # Every step of this run had one request in it: the steps counted in the "le 1" bucket grew as much as all.
    steps_after = batch_buckets(chorus)
    grown = {le: steps_after[le] - steps_before.get(le, 0) for le in steps_after}
    assert grown["1.0"] == grown["+Inf"] > 0


async def test_a_room_that_leaves_does_not_disturb_the_others(chorus):
    text = ANNOUNCEMENT + ", one room leaves."
    alone = await one_room(chorus.port, text)  # the same generation, had nobody shared it (a fixed seed)
    results = await asyncio.gather(*(one_room(chorus.port, text, leave_after=2 if i == 0 else None)
                                     for i in range(4)))
    left, *stayed = results
    assert all(pcm == alone for pcm in stayed)
    assert alone.startswith(left) and len(left) < len(alone)
    await asyncio.sleep(0.5)
    assert chorus.service.engine.stats().blocks_used == 0


async def test_with_sharing_off_identical_requests_each_run(chorus, monkeypatch):
    engine = chorus.service.engine
    monkeypatch.setattr(engine, "settings", dataclasses.replace(engine.settings, share_identical=False))
    shared_before = counter(chorus, "chorus_shared_requests")
    before = batch_buckets(chorus)
    rooms = await asyncio.gather(*(one_room(chorus.port, ANNOUNCEMENT + ", not shared.") for _ in range(3)))
    assert counter(chorus, "chorus_shared_requests") == shared_before
    assert all(len(pcm) > 0 for pcm in rooms)
    after = batch_buckets(chorus)
    assert after["+Inf"] - after["1.0"] > before["+Inf"] - before["1.0"]  # they ran side by side in the batch
