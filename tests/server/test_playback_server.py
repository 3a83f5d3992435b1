"""Playback as each reply's listener hears it, over real TCP against the real engine (tiny model): a stream whose
second sentence comes after the first one's audio has played out is an underrun; one room made faster than it is
spoken is heard with no gap; every reply observes its first chunk, and the engine its requests' slack; and under
scheduler.policy playback (the default), a reply with plenty of audio buffered sits out the steps of a new
announcement."""
from __future__ import annotations

import asyncio

import pytest
from wyoming.client import AsyncTcpClient
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop

from chorus_tools.bench.listener import HA_2026_11
from chorus_tools.client import speak, tcp_uri

from helpers import HOST, SENTENCE, TIMEOUT, ServiceThread, audio, free_port, read_until, send

pytestmark = pytest.mark.asyncio


def sample(chorus, name: str) -> float:
    """The value of one sample (e.g. chorus_playback_underruns_total) summed over its labels."""
    return sum(s.value for f in chorus.service.metrics.registry.collect() for s in f.samples if s.name == name)


def sat_out(chorus, tier: str) -> float:
    """chorus_playback_sat_out_total of one tier (exported at 0 from the start)."""
    return next(s.value for f in chorus.service.metrics.registry.collect() for s in f.samples
                if s.name == "chorus_playback_sat_out_total" and s.labels == {"tier": tier})


async def first_sentence(client: AsyncTcpClient) -> float:
    """Reads the first sentence's audio (until no chunk has come for a second); returns how long it plays."""
    events = await read_until(client, "audio-chunk")
    while True:
        try:
            events.append(await asyncio.wait_for(client.read_event(), 1.0))
        except TimeoutError:
            break
    return sum(len(e.payload or b"") for e in events if e.type == "audio-chunk") / (24000 * 2)


async def test_a_sentence_that_comes_after_the_audio_ran_out_is_counted_as_an_underrun(chorus):
    underruns = sample(chorus, "chorus_playback_underruns_total")
    silence = sample(chorus, "chorus_playback_underrun_seconds_total")
    first_sounds = sample(chorus, "chorus_reply_first_chunk_seconds_count")
    slack_seen = sample(chorus, "chorus_playback_slack_seconds_count")
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(SENTENCE + " ").event())
        # The listener plays the first sentence out, then hears nothing for 2 s before the next one is even sent.
        await asyncio.sleep(await first_sentence(client) + 2.0)
        await client.write_event(SynthesizeChunk("And then some more words here.").event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
    assert [e.type for e in events][-2:] == ["audio-stop", "synthesize-stopped"]
    assert sample(chorus, "chorus_playback_underruns_total") - underruns >= 1
    assert sample(chorus, "chorus_playback_underrun_seconds_total") - silence >= 2.0
    assert sample(chorus, "chorus_reply_first_chunk_seconds_count") - first_sounds == 1
    # The second sentence ran while its reply's listener was hearing (or waiting for) audio: the engine saw slack.
    assert sample(chorus, "chorus_playback_slack_seconds_count") > slack_seen


async def test_every_reply_observes_its_first_sound_once(chorus):
    """Whether a one-shot reply underruns depends on how fast this machine makes it: not asserted."""
    first_sounds = sample(chorus, "chorus_reply_first_chunk_seconds_count")
    pcm = audio(await send(chorus.port, Synthesize(SENTENCE).event()))
    assert pcm
    assert sample(chorus, "chorus_reply_first_chunk_seconds_count") - first_sounds == 1


async def test_one_room_made_faster_than_it_is_spoken_plays_with_no_gap(chorus):
    """The tiny model makes a reply several times faster than it is spoken (RTF < 1). A listener that plays from the
    first chunk (Home Assistant 2026.11, chorus_tools/bench/listener.py) hears all three sentences with no gap, and
    the server counts none: the next sentence is made while one plays, and nothing holds a chunk back."""
    underruns = sample(chorus, "chorus_playback_underruns_total")
    whole = sample(chorus, "chorus_replies_gap_free_total")
    reply = await speak(tcp_uri(chorus.port), "Hi there. The kitchen lights are on. The garden door is open.",
                        timeout=TIMEOUT)
    assert reply.complete and reply.error is None and reply.audio_s > 5.0
    assert reply.ended is not None and reply.started is not None
    assert (reply.ended - reply.started) / reply.audio_s < 1  # the case this test is about
    heard = HA_2026_11.hear(reply.started, reply.chunks)
    assert (heard.underruns, heard.underrun_s) == (0, 0.0)
    assert sample(chorus, "chorus_playback_underruns_total") == underruns
    assert sample(chorus, "chorus_replies_gap_free_total") == whole + 1


def batch_steps(chorus) -> dict[str, float]:
    """Steps so far by chorus_batch_size bucket bound ("1.0": steps of one request; "+Inf": all steps)."""
    return {s.labels["le"]: s.value for f in chorus.service.metrics.registry.collect() if f.name == "chorus_batch_size"
            for s in f.samples if s.name.endswith("_bucket")}


# One sentence (a reply's next sentence would be admitted beside the announcement), long enough for minutes of audio:
# the reader must still be generating when the announcement comes (the tiny model makes ~100 s of audio in a few
# seconds, which used to end the reading before it, so that its steps ran alone whatever the policy).
_CLAUSE = ("once upon a time in a quiet village by the sea there lived an old fisherman, his patient wife, their three "
           "curious children, a lazy grey cat, two noisy geese and a small brown dog who loved the long evening walks "
           "along the harbour wall where the boats came home")
READING = ", and ".join([_CLAUSE] * 4).capitalize()


@pytest.fixture(scope="module")
def long_head_start():
    """A server whose head start (20 s) covers the whole of a short announcement (the tiny model speaks ~6 s)."""
    from wyoming_chorus.config import (
        EngineSettings,
        MetricsSettings,
        SchedulerSettings,
        ServerSettings,
        Settings,
        ZeroconfSettings,
    )

    running = ServiceThread(Settings(
        server=ServerSettings(uri=f"tcp://127.0.0.1:{free_port()}", shutdown_timeout=5.0),
        zeroconf=ZeroconfSettings(enabled=False),
        engine=EngineSettings(model="builtin:tiny", seed=1234, random_model_frames=6000, max_frames=6000),
        scheduler=SchedulerSettings(head_start_seconds=20.0),
        metrics=MetricsSettings(address="127.0.0.1", port=0),
    ))
    running.start()
    yield running
    running.stop()


async def test_a_reader_with_audio_buffered_sits_out_while_an_announcement_has_its_head_start(long_head_start):
    chorus = long_head_start
    async with AsyncTcpClient(HOST, chorus.port) as reader:
        await reader.write_event(Synthesize(READING).event())
        first, received = None, 0.0
        while first is None or received - (asyncio.get_running_loop().time() - first) < 30.0:
            event = await asyncio.wait_for(reader.read_event(), TIMEOUT)
            assert event is not None and event.type != "audio-stop", "the reading ended before it had 30 s buffered"
            if event.type == "audio-chunk":
                first = first or asyncio.get_running_loop().time()
                received += len(event.payload or b"") / (24000 * 2)
        # Its listener has 30 s of audio left (past its own head start): it sits out every step of the announcement
        # but the one that admits it (the reader was alone when that step was planned).
        before = batch_steps(chorus)
        full_before = sat_out(chorus, "full")
        announcement = audio(await send(chorus.port, Synthesize(SENTENCE).event()))
        after = batch_steps(chorus)
        frames = len(announcement) // (2 * 1920)
    grown = {le: after[le] - before.get(le, 0) for le in after}
    assert grown["+Inf"] - grown["1.0"] <= 1 and grown["+Inf"] > 10, grown
    # Each step it sat out is counted under its tier: audio to spare (full), not a cut past the box's capacity.
    assert frames > 10 and sat_out(chorus, "full") - full_before >= frames - 2
    assert sat_out(chorus, "low_slack") == sat_out(chorus, "head_start") == 0
