"""A reply's playback clock (wyoming_chorus/playback_clock.py) against an independent model of a listener: audio
plays at 1x from the first chunk, pauses while nothing is buffered, and resumes with the next chunk."""
from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from wyoming_chorus.playback_clock import PlaybackClock


def test_before_the_first_chunk_there_is_no_slack():
    clock = PlaybackClock()
    assert clock.slack(10.0) is None and clock.snapshot() == (None, 0.0)


def test_slack_is_audio_written_minus_time_played():
    clock = PlaybackClock()
    assert clock.wrote(2.0, now=100.0) == 0.0
    assert clock.slack(100.5) == pytest.approx(1.5)
    assert clock.wrote(1.0, now=101.0) == 0.0  # 1 s of the 2 left: no gap
    assert clock.slack(101.0) == pytest.approx(2.0)


def test_a_chunk_after_the_audio_ran_out_is_an_underrun_and_playback_resumes_from_it():
    clock = PlaybackClock()
    clock.wrote(1.0, now=0.0)
    assert clock.wrote(1.0, now=3.0) == pytest.approx(2.0)  # ran dry at 1.0, silence until 3.0
    assert clock.slack(3.0) == pytest.approx(1.0)  # the new chunk plays from now
    assert clock.wrote(0.5, now=3.5) == 0.0
    assert clock.wrote(0.5, now=5.0) == pytest.approx(0.5)
    assert (clock.underruns, clock.underrun_seconds) == (2, pytest.approx(2.5))  # every silence, summed


writes = st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.01, 3.0)), min_size=1, max_size=40)


@given(writes)
@example([(0.0, 1.0), (3.0, 1.0)])
@example([(0.0, 0.5), (0.5, 0.5), (0.0, 0.5)])
def test_the_clock_agrees_with_a_listener_playing_from_a_buffer(steps):
    """steps: (seconds since the previous write, seconds of audio written)."""
    clock = PlaybackClock()
    now, runs_out, silence_seen, silence_told = 0.0, None, 0.0, 0.0
    for gap, seconds in steps:
        now += gap
        # The listener's model: audio ends at `runs_out`; a chunk that comes later starts playing when it arrives.
        if runs_out is not None and now > runs_out:
            silence_seen += now - runs_out
        runs_out = now + seconds if runs_out is None or now > runs_out else runs_out + seconds
        silence_told += clock.wrote(seconds, now)
        assert clock.slack(now) == pytest.approx(runs_out - now, abs=1e-6)
        assert silence_told == pytest.approx(silence_seen, abs=1e-6)
    assert clock.written == pytest.approx(sum(seconds for _, seconds in steps))


@given(writes)
@example([(0.0, 1.0), (3.0, 1.0)])
def test_the_benchmark_client_hears_the_same_silence_as_the_server_counts(steps):
    """tools' Reply.underruns (the benchmark's listener, from chunk arrivals) against the server's clock."""
    from chorus_tools.client import Reply

    reply, clock, now, told = Reply(started=0.0), PlaybackClock(), 0.0, 0.0
    for gap, seconds in steps:
        now += gap
        reply.chunks.append((now, seconds))
        told += clock.wrote(seconds, now)
    assert reply.underruns[1] == pytest.approx(told, abs=1e-6)
