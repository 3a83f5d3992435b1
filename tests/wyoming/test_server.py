"""The Wyoming server over real TCP sockets, with wyoming's own client, against the real engine (tiny model)."""
from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from wyoming.client import AsyncTcpClient, AsyncUnixClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.info import Describe, Info
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeVoice

from wyoming_chorus.metrics import Metrics
from wyoming_chorus.metrics_http import MetricsServer
from wyoming_chorus.wyoming.connections import ChorusServer
from wyoming_chorus.wyoming.listeners import bind_listener

from helpers import HOST, SENTENCE, TIMEOUT, audio, free_port, read_until, send

pytestmark = pytest.mark.asyncio

def scrape(url: str) -> dict[str, float]:
    """Samples by name, labels appended as name{k=v,...}."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return samples


async def metrics(chorus) -> dict[str, float]:
    return await asyncio.to_thread(scrape, chorus.metrics_url)


# ---- describe ----------------------------------------------------------------------------------------------------

async def test_describe_lists_the_chorus_program_and_the_engines_voices(chorus):
    events = await send(chorus.port, Describe().event(), last_type="info")
    info = Info.from_event(events[-1])
    assert len(info.tts) == 1
    program = info.tts[0]
    assert program.name == "chorus"
    assert program.installed and program.supports_synthesize_streaming
    assert program.attribution.name and program.attribution.url
    engine_voices = chorus.service.engine.voices
    assert [v.name for v in program.voices] == [v.name for v in engine_voices]
    for voice, engine_voice in zip(program.voices, engine_voices, strict=True):
        assert voice.installed and voice.description == engine_voice.description
        assert voice.languages == list(engine_voice.languages)
        assert voice.speakers is None  # a model's speakers are voices of their own
    assert [v.name for v in program.voices] == ["ryan", "serena", "eric"]  # the tiny model's speakers


# ---- one-shot ----------------------------------------------------------------------------------------------------

async def test_synthesize_replies_with_audio_in_small_chunks(chorus):
    events = await send(chorus.port, Synthesize(SENTENCE).event())
    pcm = audio(events)
    assert len(pcm) > 0 and len(pcm) % 2 == 0
    limit = chorus.service.settings.engine.samples_per_chunk * 2
    assert all(len(e.payload or b"") <= limit for e in events if e.type == "audio-chunk")


async def test_voice_and_speaker_from_info_are_accepted(chorus):
    voice = chorus.service.engine.voices[-1]
    for requested in (SynthesizeVoice(voice.name), SynthesizeVoice(voice.name, speaker=voice.speaker),
                      SynthesizeVoice("tiny", speaker=voice.speaker)):  # the model's name: the earlier single voice
        events = await send(chorus.port, Synthesize(SENTENCE, voice=requested).event())
        assert len(audio(events)) > 0


async def test_voice_null_means_the_default_voice(chorus):
    events = await send(chorus.port, Event("synthesize", {"text": SENTENCE, "voice": None}))
    assert len(audio(events)) > 0


# ---- streaming ---------------------------------------------------------------------------------------------------

async def test_stream_in_home_assistants_order_speaks_before_stop(chorus):
    full_text = "Hi there. Bye now."
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeStart().event())
        for delta in ("H", "i the", "re. B"):  # deltas split mid-word, as an LLM sends them
            await client.write_event(SynthesizeChunk(delta).event())
        # The first sentence is complete once the next one has begun: its audio comes without synthesize-stop.
        first = await asyncio.wait_for(client.read_event(), TIMEOUT)
        assert first.type == "audio-start"
        second = await asyncio.wait_for(client.read_event(), TIMEOUT)
        assert second.type == "audio-chunk"
        for delta in ("ye n", "ow."):
            await client.write_event(SynthesizeChunk(delta).event())
        await client.write_event(Synthesize(full_text).event())  # the compatibility copy: ignored in a stream
        await client.write_event(SynthesizeStop().event())
        rest = await read_until(client, "synthesize-stopped")
        assert [e.type for e in rest[-2:]] == ["audio-stop", "synthesize-stopped"]
        pcm = audio([first, second, *rest[:-1]])  # one audio-start..audio-stop for the whole stream
        assert len(pcm) > len(second.payload)
        # Nothing else was queued (the compatibility copy made no second reply): the next answer is the info.
        await client.write_event(Describe().event())
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "info"


async def test_two_streams_on_one_connection(chorus):
    async with AsyncTcpClient(HOST, chorus.port) as client:
        for _ in range(2):
            await client.write_event(SynthesizeStart().event())
            await client.write_event(SynthesizeChunk(SENTENCE).event())
            await client.write_event(SynthesizeStop().event())
            events = await read_until(client, "synthesize-stopped")
            assert events[-1].type == "synthesize-stopped"
            assert len(audio(events[:-1])) > 0


# ---- many rooms --------------------------------------------------------------------------------------------------

async def test_eight_rooms_at_once_share_batches(chorus):
    before = await metrics(chorus)
    texts = [f"Room {n}." for n in range(8)]
    replies = await asyncio.gather(*(send(chorus.port, Synthesize(t).event()) for t in texts))
    assert all(len(audio(events)) > 0 for events in replies)
    after = await metrics(chorus)
    steps = after["chorus_batch_size_count"] - before["chorus_batch_size_count"]
    single = after["chorus_batch_size_bucket{le=1.0}"] - before["chorus_batch_size_bucket{le=1.0}"]
    assert steps - single > 0, "no step ran more than one request"


async def test_describe_is_answered_within_a_second_while_the_engine_is_busy(chorus):
    speaking = asyncio.Semaphore(0)

    async def room() -> None:
        async with AsyncTcpClient(HOST, chorus.port) as client:
            await client.write_event(Synthesize(SENTENCE).event())
            assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-start"
            speaking.release()
            await read_until(client, "audio-stop")

    async with asyncio.TaskGroup() as group:
        rooms = [group.create_task(room()) for _ in range(8)]
        for _ in rooms:
            await asyncio.wait_for(speaking.acquire(), TIMEOUT)
        started = time.monotonic()
        events = await send(chorus.port, Describe().event(), last_type="info")
        elapsed = time.monotonic() - started
        busy = not all(task.done() for task in rooms)
    assert events[-1].type == "info"
    assert elapsed < 1.0
    assert busy, "the engine finished before Describe; the test proved nothing"


async def test_a_disconnect_mid_reply_aborts_the_request_and_frees_its_blocks(chorus):
    before = await metrics(chorus)
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(Synthesize(SENTENCE).event())
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-start"
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-chunk"
    deadline = time.monotonic() + 10
    while True:
        after = await metrics(chorus)
        freed = after["chorus_kv_blocks_used"] == 0
        if freed or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert freed
    # The tiny model speaks up to its frame cap (seconds of audio), so the reply was still running at the disconnect.
    aborted = "chorus_requests_total{status=aborted}"
    assert after[aborted] - before[aborted] == 1
    assert len(audio(await send(chorus.port, Synthesize(SENTENCE).event()))) > 0


# ---- other servers on the same engine: unix sockets, shutdown ---------------------------------------------------

async def extra_server(chorus, uri: str) -> ChorusServer:
    """Another Wyoming server, started on the session's engine, for the test to stop."""
    engine_settings = chorus.service.settings.engine
    server = ChorusServer(chorus.service.engine, bind_listener(uri, "server.uri", "--uri"),
                          max_text_length=engine_settings.max_text_length,
                          samples_per_chunk=engine_settings.samples_per_chunk)
    await server.start()
    return server


async def test_a_unix_socket_uri_serves_too(chorus, tmp_path):
    server = await extra_server(chorus, f"unix://{tmp_path}/chorus.sock")
    try:
        async with AsyncUnixClient(str(tmp_path / "chorus.sock")) as client:
            await client.write_event(Synthesize(SENTENCE).event())
            assert len(audio(await read_until(client, "audio-stop"))) > 0
    finally:
        await server.stop(timeout=TIMEOUT)


async def test_shutdown_lets_a_running_reply_finish_and_refuses_new_rooms(chorus):
    port = free_port()
    server = await extra_server(chorus, f"tcp://{HOST}:{port}")
    async with AsyncTcpClient(HOST, port) as client:
        await client.write_event(Synthesize(SENTENCE).event())
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-start"
        stopping = asyncio.create_task(server.stop(timeout=TIMEOUT))
        events = await read_until(client, "audio-stop")
        assert events[-1].type == "audio-stop"
    await asyncio.wait_for(stopping, TIMEOUT)
    with pytest.raises(OSError):
        await asyncio.open_connection(HOST, port)


@pytest.mark.parametrize("streaming", [False, True], ids=["one-shot", "stream"])
async def test_shutdown_ends_a_reply_that_outlasts_the_bound_with_an_error_and_audio_stop(chorus, streaming):
    port = free_port()
    server = await extra_server(chorus, f"tcp://{HOST}:{port}")
    if streaming:  # a stream whose synthesize-stop never comes: it could never finish by itself
        opening = [SynthesizeStart().event(), SynthesizeChunk(SENTENCE).event()]
    else:
        opening = [Synthesize(SENTENCE).event()]
    async with AsyncTcpClient(HOST, port) as client:
        for event in opening:
            await client.write_event(event)
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-start"
        await asyncio.wait_for(server.stop(timeout=0.01), TIMEOUT)
        events = await read_until(client, "synthesize-stopped" if streaming else "audio-stop")
    types = [e.type for e in events]
    ending = ["error", "audio-stop"] + (["synthesize-stopped"] if streaming else [])
    assert [t for t in types if t != "audio-chunk"][-len(ending):] == ending, types
    assert "shutting down" in Error.from_event(events[types.index("error")]).text
    deadline = time.monotonic() + 10
    while chorus.service.engine.stats().blocks_used and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert chorus.service.engine.stats().blocks_used == 0


# ---- bad input ---------------------------------------------------------------------------------------------------

def error_then_empty_audio(events: list[Event], code: str) -> None:
    assert [e.type for e in events] == ["error", "audio-start", "audio-stop"], [e.type for e in events]
    assert Error.from_event(events[0]).code == code


@pytest.mark.parametrize(
    ("event", "code"),
    [
        (Synthesize("").event(), "invalid-text"),
        (Synthesize("   ").event(), "invalid-text"),
        (Synthesize("x" * 100_000).event(), "invalid-text"),
        (Synthesize(SENTENCE, voice=SynthesizeVoice("no-such-voice")).event(), "unknown-voice"),
        (Event("synthesize", {}), "malformed-event"),
        (Event("synthesize", {"text": 42}), "malformed-event"),
        (Event("synthesize", {"text": SENTENCE, "voice": "tiny"}), "malformed-event"),
    ],
    ids=["empty", "blank", "100k-characters", "unknown-voice", "no-text", "text-not-string", "voice-not-object"],
)
async def test_bad_synthesize_gets_an_error_and_the_reply_still_ends(chorus, event, code):
    error_then_empty_audio(await send(chorus.port, event), code)


async def test_unknown_voice_in_a_stream_ends_with_synthesize_stopped(chorus):
    events = await send(
        chorus.port,
        SynthesizeStart(voice=SynthesizeVoice("no-such-voice")).event(),
        SynthesizeChunk(SENTENCE + " And more.").event(),
        SynthesizeStop().event(),
        last_type="synthesize-stopped",
    )
    assert [e.type for e in events] == ["error", "audio-start", "audio-stop", "synthesize-stopped"]
    assert Error.from_event(events[0]).code == "unknown-voice"


async def test_too_long_stream_gets_an_error_and_ends_with_synthesize_stopped(chorus):
    limit = chorus.service.settings.engine.max_text_length
    events = await send(
        chorus.port,
        SynthesizeStart().event(),
        *(SynthesizeChunk("blah " * 200).event() for _ in range(limit // 1000 + 1)),
        SynthesizeStop().event(),
        last_type="synthesize-stopped",
    )
    assert events[0].type == "error" and Error.from_event(events[0]).code == "invalid-text"
    assert [e.type for e in events[-2:]] == ["audio-stop", "synthesize-stopped"]


async def test_events_out_of_order_get_errors_and_the_connection_goes_on(chorus):
    async with AsyncTcpClient(HOST, chorus.port) as client:
        await client.write_event(SynthesizeChunk("stray").event())
        event = await asyncio.wait_for(client.read_event(), TIMEOUT)
        assert Error.from_event(event).code == "unexpected-event"

        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
        assert [e.type for e in events] == ["error", "synthesize-stopped"]

        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeStart().event())  # a second start: reported, the open stream goes on
        event = await asyncio.wait_for(client.read_event(), TIMEOUT)
        assert Error.from_event(event).code == "unexpected-event"
        await client.write_event(SynthesizeChunk(SENTENCE).event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
        assert len(audio(events[:-1])) > 0

        await client.write_event(Event("no-such-event", {"x": 1}))  # ignored without a word
        await client.write_event(Describe().event())
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "info"


async def test_an_unreadable_event_closes_only_that_connection(chorus):
    reader, writer = await asyncio.open_connection(HOST, chorus.port)
    writer.write(b"this is not json\n")
    await writer.drain()
    event = await asyncio.wait_for(async_read_event(reader), TIMEOUT)
    assert Error.from_event(event).code == "bad-event"
    assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # then closed
    writer.close()
    assert len(audio(await send(chorus.port, Synthesize(SENTENCE).event()))) > 0


# ---- metrics endpoint ---------------------------------------------------------------------------------------------

async def test_metrics_endpoint_exports_the_contract_names_and_health(chorus):
    samples = await metrics(chorus)
    for name in ("chorus_kv_blocks_total", "chorus_kv_blocks_used", "chorus_requests_running",
                 "chorus_requests_waiting", "chorus_frames_total", "chorus_preemptions_total",
                 "chorus_batch_size_count", "chorus_step_seconds_count",
                 "chorus_time_to_first_audio_seconds_count"):
        assert name in samples, name
    for status in ("ok", "error", "aborted", "rejected"):
        assert f"chorus_requests_total{{status={status}}}" in samples
    assert samples["chorus_kv_blocks_total"] > 0
    with urllib.request.urlopen(f"{chorus.metrics_url}/health", timeout=5) as response:
        assert response.status == 200


async def test_health_is_503_once_the_engine_loop_is_dead_and_unknown_paths_are_404():
    alive = True
    server = MetricsServer(Metrics(), lambda: alive, bind_listener(f"tcp://{HOST}:0", "metrics.port", "--metrics-port"))
    server.start()

    def status(path: str) -> int:
        try:
            with urllib.request.urlopen(f"http://{HOST}:{server.port}{path}", timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    try:
        assert await asyncio.to_thread(status, "/health") == 200
        alive = False
        assert await asyncio.to_thread(status, "/health") == 503
        assert await asyncio.to_thread(status, "/nothing") == 404
    finally:
        server.stop()


async def test_every_request_received_is_counted_once_refused_ones_included(chorus):
    statuses = ("ok", "error", "aborted", "rejected")

    def counts(samples):
        return {s: samples[f"chorus_requests_total{{status={s}}}"] for s in statuses}

    before = counts(await metrics(chorus))
    await send(chorus.port, Synthesize(SENTENCE).event())                                        # ok
    await send(chorus.port, SynthesizeStart().event(), SynthesizeChunk(SENTENCE).event(), SynthesizeStop().event(),
               last_type="synthesize-stopped")                                                   # ok, a stream
    await send(chorus.port, Synthesize("").event())                                              # empty text
    await send(chorus.port, Synthesize(SENTENCE, voice=SynthesizeVoice("nobody")).event())       # unknown voice
    await send(chorus.port, Event("synthesize", {"text": 42}))                                   # malformed
    after = counts(await metrics(chorus))
    delta = {s: after[s] - before[s] for s in statuses}
    assert delta == {"ok": 2, "error": 3, "aborted": 0, "rejected": 0}, delta


async def test_replies_still_queued_when_a_client_leaves_are_counted_as_aborted(chorus):
    statuses = ("ok", "error", "aborted", "rejected")

    def total(samples):
        return sum(samples[f"chorus_requests_total{{status={s}}}"] for s in statuses)

    before = await metrics(chorus)
    async with AsyncTcpClient(HOST, chorus.port) as client:
        for _ in range(3):  # the first is spoken (long), the other two wait behind it on this connection
            await client.write_event(Synthesize(SENTENCE).event())
        assert (await asyncio.wait_for(client.read_event(), TIMEOUT)).type == "audio-start"
    deadline = time.monotonic() + 10
    while total(await metrics(chorus)) - total(before) < 3 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    after = await metrics(chorus)
    assert total(after) - total(before) == 3
    assert after["chorus_requests_total{status=aborted}"] - before["chorus_requests_total{status=aborted}"] == 3
