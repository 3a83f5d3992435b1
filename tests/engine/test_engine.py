"""The engine end to end on the tiny model: real OpenVINO, the native paged runner, the scheduler, the codec thread."""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import replace

import numpy as np
import openvino as ov
import pytest

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.blocks import BlockManager
from wyoming_chorus.engine.device import available_devices, resolve_device
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.engine.scheduler import Scheduler
from wyoming_chorus.engine.sequence import SamplingParams, Sequence
from wyoming_chorus.errors import InvalidText, RequestFailed, SetupError, UnknownVoice
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.frontend.requests import RequestBuilder
from wyoming_chorus.metrics import Metrics
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.speech.api import Request
from wyoming_chorus.speech.speech import Speech

TINY = model_dir(EngineSettings())  # the built-in tiny model, resolved once
SAMPLES_PER_FRAME = 1920
LONG = "The washing machine in the basement has finished its cycle and the clothes are ready to be hung up."


@pytest.fixture
def engine(shared_engine) -> Speech:
    return shared_engine(EngineSettings(max_batch=8, random_model_frames=1500))  # replies long enough to overlap


async def collect(engine: Speech, text: str, **kwargs) -> tuple[bytes, list[np.ndarray], float, float]:
    """PCM, codes, and the monotonic times of the first chunk and of the end."""
    handle = engine.open(Request(text, keep_codes=True, **kwargs))
    pcm = bytearray()
    first = None
    async for chunk in handle:
        first = first or time.monotonic()
        pcm += chunk
    return bytes(pcm), handle.codes, first, time.monotonic()


def batch_sizes_above_one(metrics: Metrics) -> float:
    """Steps that ran more than one request, from the chorus_batch_size histogram."""
    samples = {(s.name, s.labels.get("le")): s.value for s in metrics.batch_size.collect()[0].samples}
    return samples[("chorus_batch_size_count", None)] - samples[("chorus_batch_size_bucket", "1.0")]


def test_the_warm_up_measures_each_probe_batch_size():
    """The playback policy's cost model knows every probed batch size before the first room speaks (without the
    probes it knows batch 1 only and must guess the rest), and learns only from decode steps (the warm-up's prompts
    are not a step's cost)."""
    engine = Speech(TINY, EngineSettings(max_batch=4))
    engine.start()
    try:
        cost = engine.core.step_cost
        assert cost.sizes == (1, 2, 4)
        assert all(cost.predict(size) < 1.0 for size in cost.sizes)
    finally:
        engine.stop()


async def test_six_staggered_requests_complete_and_the_pool_refills(engine):
    texts = ["Hi.", "Lights on.", "Good morning, everyone.", LONG, "The timer is done.", "Dinner is ready!"]

    async def later(i, text):
        await asyncio.sleep(0.15 * i)
        return await collect(engine, text)

    results = await asyncio.gather(*(later(i, t) for i, t in enumerate(texts)))
    for pcm, codes, _, _ in results:
        assert len(codes) > 0
        # every frame reaches the client exactly once: 1920 samples of 16-bit PCM per frame
        assert len(pcm) == len(codes) * SAMPLES_PER_FRAME * 2
        assert all(c.shape == (16,) and (c >= 0).all() and (c < 2048).all() for c in codes)
    assert len({len(codes) for _, codes, _, _ in results}) > 1  # different lengths
    await asyncio.sleep(0.1)
    stats = engine.stats()
    assert stats.blocks_used == 0 and stats.running == 0 and stats.waiting == 0
    engine.core.check_integrity()


async def test_a_late_request_joins_the_running_batch(engine):
    before = batch_sizes_above_one(engine.metrics)
    long_tasks = [asyncio.create_task(collect(engine, LONG, seed=s)) for s in (1, 2)]
    while engine.stats().running < 2:
        await asyncio.sleep(0.01)
    _, short_codes, short_first, short_end = await collect(engine, "Hello there.")
    long_results = await asyncio.gather(*long_tasks)
    assert short_codes
    # the short request spoke and finished while a long one was still generating (a random model may sample eos
    # early in one of them: which one depends on the last bits of its logits)
    latest_end = max(end for _, _, _, end in long_results)
    assert short_first < latest_end and short_end < latest_end
    assert batch_sizes_above_one(engine.metrics) > before


async def test_streamed_pcm_equals_one_full_decode(shared_engine):
    engine = shared_engine(EngineSettings(inference_precision="f32", kv_precision="f32", greedy=True))
    pcm, codes, _, _ = await collect(engine, "Streaming must not change a single sample.")
    decoder = ov.Core().compile_model(resolve_model("builtin:tiny") / "codec_decoder.xml", "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})
    full = decoder({"codes": np.stack(codes).T[None].astype(np.int64)})["audio"].reshape(-1)
    streamed = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32767.0
    assert streamed.shape == full.shape and len(codes) > 2 * 12  # several chunks were streamed
    # exact up to int16 rounding (half a step, 1.5e-5): no seam at chunk boundaries
    assert np.abs(streamed - np.clip(full, -1, 1)).max() < 1e-4


async def test_first_audio_leaves_after_four_frames(engine):
    stream = engine.generate(Request(LONG))
    first = await anext(stream)
    await stream.aclose()
    assert len(first) == 4 * SAMPLES_PER_FRAME * 2


async def test_preemption_recomputes_without_delivering_a_frame_twice():
    # 5 blocks of 32 rows: three tiny requests (a dozen prompt rows, up to 50 frames each) fit while prefilling,
    # not while all grow, so one is preempted
    engine = Speech(TINY, EngineSettings(max_cache_blocks=5, max_batch=4))
    engine.start()
    try:
        results = await asyncio.gather(*(collect(engine, t, seed=i) for i, t in
                                         enumerate(["Kitchen lights are on.", "The front door is open.",
                                                    "It will rain at noon."])))
        assert engine.metrics.preemptions_total._value.get() > 0
        for pcm, codes, _, _ in results:
            assert len(pcm) == len(codes) * SAMPLES_PER_FRAME * 2 and codes
        assert engine.stats().blocks_used == 0
        engine.core.check_integrity()
    finally:
        engine.stop()


async def test_a_request_larger_than_the_pool_fails_alone():
    # 4 blocks of 32 rows: a reply of 200 frames cannot fit, one of "Hi." (41 frames at most) can.
    engine = Speech(TINY, EngineSettings(max_cache_blocks=4, max_frames=200, random_model_frames=200))
    engine.start()
    try:
        huge, small = await asyncio.gather(
            collect(engine, LONG * 3), collect(engine, "Hi."), return_exceptions=True)
        assert isinstance(huge, RequestFailed) and "cache" in str(huge)
        assert not isinstance(small, Exception) and small[1]
    finally:
        engine.stop()


async def test_bad_requests_raise_clear_errors(engine):
    with pytest.raises(InvalidText):
        await collect(engine, "   ")
    with pytest.raises(InvalidText):
        await collect(engine, "x" * (engine.settings.max_text_length + 1))
    with pytest.raises(UnknownVoice):
        await collect(engine, "Hello.", voice="nobody")
    with pytest.raises(UnknownVoice):
        await collect(engine, "Hello.", speaker="nobody")


async def test_closing_the_iterator_aborts_and_frees_blocks(engine):
    stream = engine.generate(Request(LONG))
    await anext(stream)
    assert engine.stats().blocks_used > 0
    await stream.aclose()
    for _ in range(200):
        if engine.stats().blocks_used == 0:
            break
        await asyncio.sleep(0.01)
    assert engine.stats().blocks_used == 0
    assert engine.metrics.sentences_total.labels(status="aborted")._value.get() >= 1


async def test_a_cancel_right_after_open_never_leaves_the_request_running(engine):
    """The cancel follows the request through the front end into the engine: it can never overtake its Add."""
    aborted = engine.metrics.sentences_total.labels(status="aborted")
    before = aborted._value.get()
    whole = engine.open(Request(LONG, keep_codes=True))  # keep_codes: a generation of its own
    whole.cancel()
    streamed = engine.open(Request(None))
    streamed.feed(LONG)  # enough words to start at once
    streamed.cancel()
    waiting = engine.open(Request(None))  # its text has not started: it never reaches the engine
    waiting.cancel()
    for handle in (whole, streamed, waiting):
        with pytest.raises(RequestFailed, match="aborted"):
            async for _ in handle:
                pass
    for _ in range(500):
        if aborted._value.get() == before + 2 and engine.stats().blocks_used == 0:
            break
        await asyncio.sleep(0.01)
    assert aborted._value.get() == before + 2
    stats = engine.stats()
    assert stats.blocks_used == 0 and stats.running == 0 and stats.waiting == 0


def test_engine_settings_reach_the_runner():
    # f16 runs on every CPU: as f16 where attention computes in f32 (AVX2), kept as bf16 where it computes in bf16
    engine = Speech(TINY, replace(EngineSettings(), max_cache_blocks=9, kv_precision="f16"))
    assert engine.stats().blocks_total == 9
    assert engine.core.runner.kv_precision == cpu_facts().kv_caches("")["f16"]


def test_the_default_settings_run_a_u8_cache_on_the_device_auto_picks():
    runner = Speech(TINY, replace(EngineSettings(), max_cache_blocks=4)).core.runner
    assert runner.kv_precision == "u8" and runner.device == resolve_device("AUTO", available_devices())


@pytest.mark.parametrize("kv", ["bf16", "f32"])
def test_a_kv_precision_the_cpu_cannot_run_is_one_line_naming_what_it_can(kv):
    cpu = cpu_facts()
    if cpu.kv_error(kv, "") is None:
        pytest.skip(f"this CPU ({cpu.isa}) runs {kv} KV caches at its default {cpu.inference_precision('')} inference")
    with pytest.raises(SetupError) as error:
        Speech(TINY, replace(EngineSettings(), device="CPU", kv_precision=kv))
    message = str(error.value)
    assert message.startswith(f"engine.kv_precision {kv}: this CPU ({cpu.isa}) cannot run")
    runnable = set(re.findall(r"\b(?:u8|f16|bf16|f32)\b", message.split("; it can run ")[1]))
    assert set(cpu.kv_caches("")) <= runnable
    assert "\n" not in message and error.value.__context__ is None  # raised before compiling, not from a plugin error


def test_a_reader_whose_event_loop_has_closed_does_not_stop_the_engine(engine):
    async def abandon():
        stream = engine.generate(Request(LONG))
        await anext(stream)
        await stream.aclose()

    asyncio.run(abandon())  # its loop is gone before the engine has delivered the abort
    time.sleep(0.5)
    pcm, codes, _, _ = asyncio.run(asyncio.wait_for(collect(engine, "Hello."), 60))
    assert codes and len(pcm) == len(codes) * SAMPLES_PER_FRAME * 2


@pytest.mark.parametrize("per_word, text, frames", [
    (5.0, "one two three four five six seven eight nine ten", 50),   # 10 words at 12.5 frames/s, 2.5 words/s
    (5.0, "Hi.", 13),                                               # a second at least
    (2.5, LONG, 48),                                                # 19 words
])
def test_the_benchmark_setting_ends_a_random_models_reply_at_a_natural_length(per_word, text, frames):
    requests = RequestBuilder(ModelDir(resolve_model("builtin:tiny")),
                              EngineSettings(benchmark_frames_per_word=per_word))
    assert requests.build(text, seed=0).frame_cap == frames
    # Off (the default), the random-model cap applies whatever the text.
    assert RequestBuilder(requests.model, EngineSettings()).build(text, seed=0).frame_cap <= 50


def test_the_streaming_prompt_layout_moves_a_whole_texts_tokens_out_of_the_prompt():
    """engine.prompt_layout: streaming gives a complete text the prompt a streamed one starts with (one text token)
    and the rest of its tokens as the frames' text rows, ending with tts_eos; the reference layout has them all up
    front. The same text, rows for rows: only where they go differs."""
    model = ModelDir(resolve_model("builtin:tiny"))
    whole = RequestBuilder(model, EngineSettings(prompt_layout="reference")).build(LONG, seed=0)
    streaming = RequestBuilder(model, EngineSettings(prompt_layout="streaming")).build(LONG, seed=0)
    tokens = RequestBuilder(model, EngineSettings()).prompts.build(LONG).n_text_tokens
    assert tokens > 10
    assert len(whole.trailing_text) == 0
    # Up front: the text's tokens and tts_eos, and the start row; streaming: only the first token, on the start row.
    assert whole.num_prompt_rows - streaming.num_prompt_rows == tokens + 1
    assert len(streaming.trailing_text) == tokens  # tokens 2..n and tts_eos
    assert not streaming.text_open  # nothing more will come: it never waits for text
    shared = streaming.num_prompt_rows - 1  # the role and tag rows
    np.testing.assert_array_equal(streaming.rows(0, shared), whole.rows(0, shared))
    assert whole.frame_cap == streaming.frame_cap

# ---- issue 15: silent streams, a stream that outgrows the pool, preemptions without a step ----------------------

EIGHT_WORDS = "The kitchen lights will turn off in ten"


async def held_open(engine: Speech, first: str, more: asyncio.Event, rest: tuple[str, ...] = (), **kwargs) -> int:
    """Speaks a streamed text: `first` now, then nothing until `more` is set, then each of `rest` and the text's end.
    Returns the PCM bytes it got."""
    handle = engine.open(Request(None, **kwargs))
    handle.feed(first)

    async def later() -> None:
        await more.wait()
        for piece in rest:
            handle.feed(piece)
        handle.close()

    return (await asyncio.gather(drain(handle), later()))[0]


async def drain(stream) -> int:
    total = 0
    async for chunk in stream:
        total += len(chunk)
    return total


async def test_streams_waiting_for_text_leave_the_batch_to_a_one_shot_request(shared_engine):
    # Issue 15: streams that sent some words and then nothing took every batch place; "Hi." got no event at all.
    # test_sentence_audio.py's and test_stream_limits.py's engine too
    engine = shared_engine(EngineSettings(max_batch=2, seed=5, random_model_frames=1500))
    preemptions = engine.metrics.preemptions_total._value.get()
    more = asyncio.Event()
    try:
        streams = [asyncio.create_task(held_open(engine, EIGHT_WORDS, more, language="en")) for _ in range(2)]
        for _ in range(3000):
            if engine.stats().awaiting_text == 2:
                break
            await asyncio.sleep(0.01)
        assert engine.stats().awaiting_text == 2
        pcm, codes, _, _ = await asyncio.wait_for(collect(engine, "Hi."), 60)
        assert codes and len(pcm) == len(codes) * SAMPLES_PER_FRAME * 2
        assert engine.stats().running == 0  # the streams hold their blocks, not batch places
        more.set()
        assert all(size > 0 for size in await asyncio.wait_for(asyncio.gather(*streams), 60))
        # the streams kept their blocks: room enough
        assert engine.metrics.preemptions_total._value.get() == preemptions
        assert engine.stats().blocks_used == 0
        engine.core.check_integrity()
    finally:
        more.set()


async def test_a_stream_fed_beyond_the_pool_fails_at_once_and_others_go_on():
    # Issue 15: 8 blocks of 32 rows; fed 120 words (600 frames at 5 per word) it preempted itself for ever, silently,
    # and every other request starved.
    engine = Speech(TINY, EngineSettings(max_cache_blocks=8, benchmark_frames_per_word=5.0, seed=1))
    engine.start()
    more = asyncio.Event()
    try:
        words = [f" word{i}" for i in range(112)]
        stream = asyncio.create_task(held_open(engine, EIGHT_WORDS, more, tuple(words), language="en"))
        while engine.stats().running == 0:
            await asyncio.sleep(0.01)
        more.set()
        with pytest.raises(RequestFailed, match="KV cache blocks .* the whole cache holds 8"):
            await asyncio.wait_for(stream, 60)
        _, codes, _, _ = await asyncio.wait_for(collect(engine, "Hi."), 60)
        assert codes
        assert engine.metrics.sentences_total.labels(status="error")._value.get() == 1
        assert engine.stats().blocks_used == 0
        engine.core.check_integrity()
    finally:
        more.set()
        engine.stop()


async def test_a_preemption_made_by_a_schedule_that_runs_nothing_is_counted():
    # Issue 15: a batch of one gives its deferred request up to a needed one in a schedule() with no entries (the
    # needed one joins at the next): chorus_preemptions_total stayed 0.
    engine = Speech(TINY, EngineSettings(max_batch=1, random_model_frames=1500, seed=1))
    engine.start()
    ahead = engine.open(Request(LONG, deferred=True))
    try:
        await anext(ahead)  # running, generated ahead of need
        _, codes, _, _ = await asyncio.wait_for(collect(engine, "Hi."), 60)
        assert codes
        assert engine.metrics.preemptions_total._value.get() == 1
    finally:
        ahead.cancel()
        engine.stop()


def test_a_prefix_cached_block_is_the_block_the_request_computes_alone():
    # Issue 15: with the prefix cache, a seeded request spoken alone after churn gave other audio than before it. A
    # u8 block's contents depend on how its rows were split into prefill chunks (its keys are quantised per channel
    # over the block), and a chunk cut by the budget a busy step had left split a block that the cache then kept.
    runner = PagedRunner(ModelDir(resolve_model("builtin:tiny")),
                         RunnerOptions(device="CPU", kv_precision="u8", num_blocks=24))
    hidden, block = runner.hidden_size, runner.block_size
    prompt = np.random.default_rng(5).standard_normal((3 * block + 4, hidden)).astype(np.float32) * 0.5
    greedy = SamplingParams(temperature=0.0, sub_temperature=0.0)

    def request(seq_id: int, rows: np.ndarray, frames: int) -> Sequence:
        return Sequence(seq_id, rows, np.zeros((0, hidden), np.float32), np.zeros(hidden, np.float32), frames, greedy)

    def logits_of(sched: Scheduler, watched: Sequence) -> np.ndarray:
        """Runs until `watched` ends: the logits of each of its frames."""
        seen = []
        while not watched.is_finished:
            entries = sched.schedule()
            output = runner.step(entries, want_logits=True)
            seen += [output.logits[i].copy() for i, e in enumerate(entries) if e.seq is watched and e.emits]
            sched.update(entries, output)
        return np.stack(seen)

    def step(sched: Scheduler) -> None:
        entries = sched.schedule()
        sched.update(entries, runner.step(entries))

    def scheduler() -> Scheduler:  # a step budget of two blocks: the prompt takes more than one step
        return Scheduler(BlockManager(runner.num_blocks, block), max_running=4, max_waiting=8, token_budget=2 * block)

    alone = scheduler()
    alone.add(request(1, prompt, 4))
    reference = logits_of(alone, alone.requests[1])
    busy = scheduler()
    others = [request(10 + i, prompt[:5] + i + 1, 8) for i in range(3)]
    for other in others:
        busy.add(other)
    step(busy)  # they prefill; from now on they decode
    busy.add(request(2, prompt, 4))  # its chunks share each step's budget with their decodes
    while busy.has_work():
        step(busy)
    busy.add(request(3, prompt, 4))  # alone again, it takes the prompt's first blocks from the cache
    cached = logits_of(busy, busy.requests[3])
    assert busy.blocks.rows_reused == 3 * block
    np.testing.assert_array_equal(cached, reference)
