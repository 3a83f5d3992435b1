"""The codec thread (engine/audio_output.py) on the tiny model's real decoder: between requests it decodes in their
listeners' order (no audio yet first, then least slack), each decoder block's audio goes out as soon as it is
decoded, and a request's chunks, so its audio, never depend on when its frames came."""
from __future__ import annotations

import threading
import time

import numpy as np

from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.engine.audio_output import CodecWorker
from wyoming_chorus.engine.pacing import PlaybackPacing
from wyoming_chorus.engine.playback_policy import PlaybackLimits, PlaybackPolicy
from wyoming_chorus.engine.step_cost import StepCost
from wyoming_chorus.engine.streaming_codec import SAMPLES_PER_FRAME
from wyoming_chorus.engine.urgent_steps import FIRST_AUDIO, HEAD_START, QUIET, UrgentSteps
from wyoming_chorus.playback_clock import PlaybackClock

TINY = model_dir(EngineSettings())
BLOCK = 4  # frames per decoder block (StreamingCodecDecoder's default): one chunk of audio


class Sink:
    """Records what the codec thread hands over, with the order across sinks."""

    order: list[str] = []
    lock = threading.Lock()

    def __init__(self, name: str, clock: PlaybackClock | None, needed_now: bool = True):
        """`needed_now` False: a reply's next sentence, made ahead of need."""
        self.name, self.clock, self.needed_now = name, clock, needed_now
        self.pcm: list[bytes] = []
        self.done = threading.Event()

    def put(self, pcm: bytes) -> None:
        with self.lock:
            self.order.append(self.name)
        self.pcm.append(pcm)

    def add_codes(self, codes) -> None:
        pass

    def finish(self) -> None:
        self.done.set()

    def fail(self, error: BaseException) -> None:
        raise AssertionError(f"{self.name} failed: {error}")


def frames(n: int, seed: int) -> list[np.ndarray]:
    return list(np.random.default_rng(seed).integers(0, 2048, (n, 16), dtype=np.int32))


def test_a_reply_with_no_audio_yet_is_decoded_before_a_reader_with_audio_buffered():
    reader_clock = PlaybackClock()
    reader_clock.wrote(20.0)  # 20 s buffered
    reader, new = Sink("reader", reader_clock), Sink("new", PlaybackClock())
    Sink.order = []
    codec = CodecWorker(TINY, "")
    # Queued before the thread looks: the reader's frames arrived first.
    for codes in frames(BLOCK, 1):
        codec.push(1, reader, codes)
    for codes in frames(BLOCK, 2):
        codec.push(2, new, codes)
    codec.close(1, reader)
    codec.close(2, new)
    codec.start()
    try:
        assert reader.done.wait(60) and new.done.wait(60)
    finally:
        codec.stop(10)
    assert Sink.order == ["new", "reader"]


def test_the_audio_is_the_same_whenever_the_frames_come():
    codes = frames(31, 3)  # seven whole blocks and a rest
    results = []
    for pace in (0.0, 0.01):
        sink = Sink("one", None)
        codec = CodecWorker(TINY, "")
        codec.start()
        try:
            for frame in codes:
                codec.push(1, sink, frame)
                time.sleep(pace)  # 0: all queued at once and taken together; else one frame at a time
            codec.close(1, sink)
            assert sink.done.wait(60)
        finally:
            codec.stop(10)
        results.append(sink.pcm)
    for chunks in results:  # each block is a chunk of its own, handed over as soon as it is decoded
        assert [len(chunk) for chunk in chunks] == [BLOCK * SAMPLES_PER_FRAME * 2] * 7 + [3 * SAMPLES_PER_FRAME * 2]
    assert b"".join(results[0]) == b"".join(results[1])


class HeldSink(Sink):
    """Its first chunk blocks the codec thread until the test lets go: whatever the test queues meanwhile arrives
    while a backlog of this stream's chunks is still to be decoded."""

    def __init__(self, name: str, clock: PlaybackClock | None):
        super().__init__(name, clock)
        self.first_put = threading.Event()
        self.release = threading.Event()

    def put(self, pcm: bytes) -> None:
        super().put(pcm)
        if not self.first_put.is_set():
            self.first_put.set()
            assert self.release.wait(60)


def test_a_new_reply_goes_before_the_rest_of_a_readers_backlog():
    """The worker looks at its queue after every chunk: a reply whose first frames come while a read-out's backlog
    is being decoded gets its first chunk next, not after the backlog."""
    reader_clock = PlaybackClock()
    reader_clock.wrote(20.0)
    reader, new = HeldSink("reader", reader_clock), Sink("new", PlaybackClock())
    Sink.order = []
    codec = CodecWorker(TINY, "")
    for codes in frames(4 * BLOCK, 1):  # four blocks, all ready at once
        codec.push(1, reader, codes)
    codec.close(1, reader)
    codec.start()
    try:
        assert reader.first_put.wait(60)
        for codes in frames(BLOCK, 2):
            codec.push(2, new, codes)
        codec.close(2, new)
        reader.release.set()
        assert reader.done.wait(60) and new.done.wait(60)
    finally:
        reader.release.set()
        codec.stop(10)
    assert Sink.order == ["reader", "new", "reader", "reader", "reader"]


def decoding_held_at_call(call: int, first: Sink, first_frames: int, second: Sink | None = None,
                          second_frames: int = 0) -> list[int]:
    """`first_frames` frames of `first` are queued; the real decoder is held in its `call`-th block while
    `second_frames` frames of `second` are queued, then let go. Returns what each sink had been handed (chunks)
    when the decoder was held, after which everything is decoded to the end."""
    Sink.order = []
    codec = CodecWorker(TINY, "")
    decoder_push = codec._decoder.push
    calls, held, release = [0], threading.Event(), threading.Event()
    seen: list[int] = []

    def push(stream, codes):
        calls[0] += 1
        if calls[0] == call:
            seen.extend([len(first.pcm), len(second.pcm) if second else 0])
            held.set()
            assert release.wait(60)
        return decoder_push(stream, codes)

    codec._decoder.push = push
    for codes in frames(first_frames, 1):
        codec.push(1, first, codes)
    codec.close(1, first)
    codec.start()
    try:
        assert held.wait(60)
        if second is not None:
            for codes in frames(second_frames, 2):
                codec.push(2, second, codes)
            codec.close(2, second)
        release.set()
        assert first.done.wait(60) and (second is None or second.done.wait(60))
    finally:
        release.set()
        codec.stop(10)
    return seen


def test_each_block_is_heard_as_soon_as_it_is_decoded():
    """A listener gets every decoder block's audio before the next block is decoded: a reply made as fast as it
    plays never runs dry (were three blocks sent as one chunk, the second chunk would have to be made three times
    faster than real time to come before the first one has played)."""
    reader = Sink("reader", PlaybackClock())
    assert decoding_held_at_call(3, reader, 3 * BLOCK) == [2, 0]
    assert len(reader.pcm) == 3


def test_a_new_reply_goes_between_the_blocks_of_a_readers_backlog():
    """The queue is looked at between blocks: a reply whose first frames come while a read-out's block is being
    decoded is heard right after that block."""
    reader_clock = PlaybackClock()
    reader_clock.wrote(20.0)
    reader, new = Sink("reader", reader_clock), Sink("new", PlaybackClock())
    decoding_held_at_call(2, reader, 3 * BLOCK, new, BLOCK)
    assert Sink.order == ["reader", "reader", "new", "reader"]


def test_between_readers_the_least_slack_goes_next_block_by_block():
    """Reader b (less audio left to play than a) becomes ready while a's block is decoded: b's block comes before
    a's next one, whoever began first."""
    a_clock, b_clock = PlaybackClock(), PlaybackClock()
    a_clock.wrote(20.0)
    b_clock.wrote(10.0)
    a, b = Sink("a", a_clock), Sink("b", b_clock)
    decoding_held_at_call(2, a, 3 * BLOCK, b, 2 * BLOCK)
    assert Sink.order == ["a", "a", "b", "b", "a"]


def test_a_replys_next_sentence_goes_after_every_block_its_listener_waits_for():
    """The next sentence shares its reply's clock, so it looked as urgent as the sentence being heard; it plays only
    after that one, so it goes last, here after a reader's block too, even with its frames queued first."""
    reply_clock, reader_clock = PlaybackClock(), PlaybackClock()
    reply_clock.wrote(0.3)
    reader_clock.wrote(2.0)
    next_sentence = Sink("next", reply_clock, needed_now=False)
    heard, reader = Sink("heard", reply_clock), Sink("reader", reader_clock)
    Sink.order = []
    codec = CodecWorker(TINY, "")
    for seq_id, sink in ((1, next_sentence), (2, heard), (3, reader)):
        for codes in frames(2 * BLOCK, seq_id):
            codec.push(seq_id, sink, codes)
        codec.close(seq_id, sink)
    codec.start()
    try:
        assert next_sentence.done.wait(60) and heard.done.wait(60) and reader.done.wait(60)
    finally:
        codec.stop(10)
    assert Sink.order == ["heard", "heard", "reader", "reader", "next", "next"]


def paced(spare_seconds: float, head_start_seconds: float = 5.0) -> PlaybackPacing:
    """The playback policy as the engine hands it to the codec: spare_seconds is scheduler.min_slack_seconds."""
    limits = PlaybackLimits(head_start_seconds=head_start_seconds, min_slack_seconds=spare_seconds)
    return PlaybackPacing(PlaybackPolicy(limits, StepCost(), 0.08), block_frames=BLOCK)


def held_until_quiet(urgent: UrgentSteps, sink: Sink) -> None:
    """`sink` gets nothing while the engine's level stays up (held while the head start runs), and all of its audio
    once the engine marks a quiet step."""
    assert not sink.done.wait(0.5) and sink.pcm == []
    urgent.mark(QUIET)
    assert sink.done.wait(60)


def test_while_the_engine_runs_a_head_start_a_listener_with_audio_to_spare_waits():
    """Under the playback policy the engine marks the steps that make a head start's frames; meanwhile the codec
    decodes only listeners with no audio to spare (no audio yet, or less than spare_seconds left), and the others
    once the engine marks a step without a head start."""
    pacing = paced(spare_seconds=1.0)
    urgent = pacing.urgent
    reader_clock, low_clock = PlaybackClock(), PlaybackClock()
    reader_clock.wrote(20.0)  # 20 s to spare
    low_clock.wrote(0.5)  # half a second left: below spare_seconds
    reader, low, new = Sink("reader", reader_clock), Sink("low", low_clock), Sink("new", PlaybackClock())
    Sink.order = []
    codec = CodecWorker(TINY, "", pacing=pacing)
    urgent.mark(HEAD_START)
    for seq_id, sink in ((1, reader), (2, low), (3, new)):
        for codes in frames(BLOCK, seq_id):
            codec.push(seq_id, sink, codes)
        codec.close(seq_id, sink)
    codec.start()
    try:
        assert low.done.wait(60) and new.done.wait(60)
        held_until_quiet(urgent, reader)
    finally:
        urgent.mark(QUIET)
        codec.stop(10)
    assert Sink.order == ["new", "low", "reader"]


def test_a_head_starts_own_blocks_go_out_during_the_head_start_though_it_has_audio_to_spare():
    """The hold is for the others: a reply still in its first head_start_seconds is what the head start's steps are
    for (Home Assistant's conversion releases its first sound only at 5 s written), so its blocks go out as they are
    made, however far ahead of its listener they are; a reader past its head start with as much to spare waits."""
    pacing = paced(spare_seconds=1.0, head_start_seconds=60.0)
    urgent = pacing.urgent
    # A head start of 60 s (the server's is scheduler.head_start_seconds, 5 s): wide margins for a slow machine, since
    # the clocks run in real time. Compiled before the clocks start.
    codec = CodecWorker(TINY, "", pacing=pacing)
    starting_clock, reader_clock = PlaybackClock(), PlaybackClock()
    starting_clock.wrote(40.0)  # 40 s written, all still to play: plenty to spare, but short of its head start
    reader_clock.wrote(80.0)
    starting, reader = Sink("starting", starting_clock), Sink("reader", reader_clock)
    Sink.order = []
    urgent.mark(HEAD_START)
    for seq_id, sink in ((1, reader), (2, starting)):
        for codes in frames(2 * BLOCK, seq_id):
            codec.push(seq_id, sink, codes)
        codec.close(seq_id, sink)
    codec.start()
    try:
        assert starting.done.wait(20) and len(starting.pcm) == 2  # the old rule held it until its slack fell to 1 s
        held_until_quiet(urgent, reader)
    finally:
        urgent.mark(QUIET)
        codec.stop(10)
    assert Sink.order == ["starting", "starting", "reader", "reader"]


def test_while_the_engine_makes_a_new_replys_first_frames_only_listeners_with_audio_to_spare_wait():
    """A reply with no audio yet in the step: listeners with spare_seconds or more left wait (they lose nothing), but
    not one with less, nor one already silent: a listener that plays from the first chunk hears each held block as a
    gap (the old rule held every listener not yet dry for spare_seconds, 'low' included)."""
    pacing = paced(spare_seconds=60.0)
    urgent = pacing.urgent
    # spare_seconds 60 (the server's is scheduler.min_slack_seconds, 1 s): the sinks' clocks run in real time and
    # hear nothing of what is handed over, so 'low' and 'dry' drift towards -60 s, where the old rule let them out
    # after 50-60 s; waits of 30 s tell the rules apart on a slow machine too. Compiled before the clocks start.
    codec = CodecWorker(TINY, "", pacing=pacing)
    reader_clock, low_clock, dry_clock = PlaybackClock(), PlaybackClock(), PlaybackClock()
    reader_clock.wrote(100.0)
    low_clock.wrote(0.5)  # half a second left
    dry_clock.wrote(1.0, now=time.monotonic() - 11.0)  # its second of audio ran out 10 s ago
    sinks = {1: Sink("reader", reader_clock), 2: Sink("low", low_clock), 3: Sink("dry", dry_clock),
             4: Sink("new", PlaybackClock())}
    Sink.order = []
    urgent.mark(FIRST_AUDIO)
    for seq_id, sink in sinks.items():
        for codes in frames(BLOCK, seq_id):
            codec.push(seq_id, sink, codes)
        codec.close(seq_id, sink)
    codec.start()
    try:
        assert sinks[4].done.wait(30) and sinks[3].done.wait(30) and sinks[2].done.wait(30)
        assert not sinks[1].done.wait(0.5) and sinks[1].pcm == []  # held
        urgent.mark(QUIET)
        assert sinks[1].done.wait(60)
    finally:
        urgent.mark(QUIET)
        codec.stop(10)
    assert Sink.order == ["new", "dry", "low", "reader"]


def test_while_the_engine_runs_a_head_start_a_next_sentence_waits_after_its_first_block():
    """A reply's next sentence made ahead of need plays only after the sentence heard now; decoded meanwhile it took
    the cores from that sentence's steps (a lone two-sentence announcement gapped). While the engine runs steps a
    listener waits for, its first block still goes (ready when the listener reaches it), the rest once it is needed,
    or once the steps are quiet."""
    pacing = paced(spare_seconds=1.0, head_start_seconds=0.0)
    urgent = pacing.urgent
    codec = CodecWorker(TINY, "", pacing=pacing)
    clock = PlaybackClock()
    clock.wrote(0.3)  # the announcement's first block is out: 0.3 s in hand
    heard, ahead = Sink("heard", clock), Sink("ahead", clock, needed_now=False)
    later = Sink("later", PlaybackClock(), needed_now=False)
    Sink.order = []
    urgent.mark(HEAD_START)
    for seq_id, sink, blocks in ((1, heard, 1), (2, ahead, 3)):
        for codes in frames(blocks * BLOCK, seq_id):
            codec.push(seq_id, sink, codes)
        codec.close(seq_id, sink)
    codec.start()
    try:
        assert heard.done.wait(60)
        assert not ahead.done.wait(0.5) and len(ahead.pcm) == 1  # its first block only
        ahead.needed_now = True  # the sentence before has all gone out: the listener waits for this one now
        assert ahead.done.wait(60) and len(ahead.pcm) == 3
        # Another next sentence, held the same way, goes on once the engine's steps are quiet.
        for codes in frames(2 * BLOCK, 3):
            codec.push(3, later, codes)
        codec.close(3, later)
        assert not later.done.wait(0.5) and len(later.pcm) == 1
        urgent.mark(QUIET)
        assert later.done.wait(60) and len(later.pcm) == 2
    finally:
        urgent.mark(QUIET)
        codec.stop(10)
    assert Sink.order[:2] == ["heard", "ahead"]


def test_once_stopped_the_codec_refuses_jobs_and_their_callers_answer_them():
    """The codec thread closes its inbox when it stops: a job put later is refused (False), so the engine fails that
    reply itself instead of leaving its reader waiting; the jobs put before the stop are still done."""
    sink = Sink("one", None)
    codec = CodecWorker(TINY, "")
    for codes in frames(BLOCK, 1):
        assert codec.push(1, sink, codes)
    assert codec.close(1, sink)
    codec.start()
    codec.stop(60)
    assert not codec.is_alive() and sink.done.is_set() and len(sink.pcm) == 1
    late = Sink("late", None)
    assert not codec.push(2, late, frames(1, 2)[0])
    assert not codec.fail(2, late, RuntimeError("the engine stopped"))
