"""What a household hears of one reply through Home Assistant 2026.11, from the audio chunks a client received.

Home Assistant 2026.11 reads the WAV header itself and feeds the server's PCM to ffmpeg as raw s16le (or skips
ffmpeg for WAV that needs no resampling): its first converted byte comes after 0.08-0.48 s of audio, where 2026.2
held the first 4.3 s. A satellite plays what it gets at once. So the model listener:

- starts playing once it has received `start_audio_s` of audio, `latency_s` later (the conversion and the hop to the
  satellite): that is the reply's *first sound*, counted from when its first text was sent;
- then plays at 1x: a chunk that arrives after the audio before it ran out is an *underrun*, heard as silence for
  that long, and playback goes on from that chunk (the rest of the reply shifts by the silence);
- gives up when it has not started `give_up_s` after the request (a Voice PE gives up 2 s after it gets the URL,
  which Home Assistant hands it when the pipeline starts speaking, i.e. about when the first text goes out).

A reply that ends before `start_audio_s` of audio is played from its last chunk. The latency delays every chunk
alike, so it moves the first sound and never makes or hides an underrun.
"""
from __future__ import annotations

from dataclasses import dataclass

# Lateness below this is float rounding in the sums of chunk lengths, not silence.
ROUNDING_S = 1e-9


@dataclass(frozen=True)
class Heard:
    first_sound_s: float | None  # from the request's first text to the first sound; None if no audio came
    underruns: int
    underrun_s: float
    gave_up: bool  # the satellite would have given up before the first sound

    @property
    def gap_free(self) -> bool:
        """Heard from its first sound to its end without a gap (and not given up on)."""
        return self.first_sound_s is not None and not self.gave_up and self.underruns == 0


@dataclass(frozen=True)
class Listener:
    """Home Assistant 2026.11 and a Voice PE-like satellite (notes: home-assistant-2026.md)."""
    start_audio_s: float = 0.08
    latency_s: float = 0.1
    give_up_s: float = 2.0

    def hear(self, started: float | None, chunks: list[tuple[float, float]]) -> Heard:
        """`chunks`: (arrival, seconds of audio) in arrival order, on the clock `started` is on."""
        received, runs_out, begins = 0.0, None, None
        times, silence = 0, 0.0
        for arrival, length in chunks:
            at = arrival + self.latency_s
            if runs_out is None:  # still filling the conversion's input
                received += length
                if received >= self.start_audio_s:
                    begins, runs_out = at, at + received
                continue
            if at > runs_out + ROUNDING_S:
                times, silence = times + 1, silence + at - runs_out
                runs_out = at
            runs_out += length
        if begins is None and chunks:  # the whole reply was shorter than the conversion's start
            begins = chunks[-1][0] + self.latency_s
        first = begins - started if begins is not None and started is not None else None
        return Heard(first, times, silence, first is None or first > self.give_up_s)


HA_2026_11 = Listener()
