"""Prometheus metrics (wyoming_chorus.metrics_http serves them at /metrics beside a /health probe).

Each Metrics object owns its own CollectorRegistry, so several engines (tests) never clash over global names.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REQUEST_STATUSES = ("ok", "error", "aborted", "rejected")


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.kv_blocks_total = Gauge("chorus_kv_blocks_total", "KV cache blocks in the pool", registry=r)
        self.kv_blocks_used = Gauge("chorus_kv_blocks_used", "KV cache blocks held by requests", registry=r)
        # The engine's requests are sentences: a reply of three sentences is three of them.
        self.requests_running = Gauge("chorus_requests_running", "Sentences in the running batch", registry=r)
        self.kv_blocks_cached = Gauge(
            "chorus_kv_blocks_cached", "Free KV blocks that still hold a prompt prefix (reused by a later request "
            "with the same prompt start, else handed out last)", registry=r)
        self.prefix_rows_reused_total = Counter(
            "chorus_prefix_rows_reused", "Prompt rows whose KV was taken from the prefix cache instead of computed",
            registry=r)
        self.shared_requests_total = Counter(
            "chorus_shared_requests_total", "Sentences served by attaching to an identical generation already "
            "running (no batch place, no KV blocks of their own)", registry=r)
        self.requests_awaiting_text = Gauge(
            "chorus_requests_awaiting_text", "Requests of a streamed text waiting for its next words, out of the "
            "batch: they keep their KV blocks while the pool has room, and take no batch place", registry=r)
        self.requests_waiting = Gauge(
            "chorus_requests_waiting", "Sentences waiting to be admitted (preempted ones re-enter past "
            "engine.max_waiting, so this can exceed it)", registry=r)
        # What clients asked for: one per synthesize event or stream, refused ones included (bad text, unknown
        # voice, malformed data, queue full), so that the sum over statuses is the number of requests received.
        self.requests_total = Counter(
            "chorus_requests_total", "Replies (synthesize requests and streams) by outcome", ["status"], registry=r
        )
        self.sentences_total = Counter(
            "chorus_sentences_total", "Sentences the engine finished, by outcome", ["status"], registry=r
        )
        for status in REQUEST_STATUSES:  # export every outcome from the start, not only once it has happened
            self.requests_total.labels(status=status)
            self.sentences_total.labels(status=status)
        self.frames_total = Counter("chorus_frames_total", "Audio frames generated", registry=r)
        self.preemptions_total = Counter(
            "chorus_preemptions_total", "Requests preempted (blocks freed, recomputed later)", registry=r
        )
        self.batch_size = Histogram(
            "chorus_batch_size", "Requests in one engine step", registry=r,
            buckets=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64),
        )
        self.step_seconds = Histogram(
            "chorus_step_seconds", "Duration of one engine step", registry=r,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.08, 0.1, 0.25, 0.5, 1.0),
        )
        self.time_to_first_audio = Histogram(
            "chorus_time_to_first_audio_seconds", "From request to its first PCM chunk", registry=r,
            buckets=(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0),
        )

        # Playback as each reply's listener hears it (wyoming_chorus/playback_clock.py): audio plays at 1x from a
        # reply's first chunk, so a chunk written after the audio before it has run out is an underrun.
        self.playback_underruns = Counter(
            "chorus_playback_underruns", "Times a reply's listener ran out of audio before its next chunk", registry=r)
        self.playback_underrun_seconds = Counter(
            "chorus_playback_underrun_seconds", "Silence heard inside replies, waiting for their next chunk",
            registry=r)
        self.playback_slack = Histogram(
            "chorus_playback_slack_seconds", "Audio a reply's listener had left to play, per request and step",
            registry=r, buckets=(-1.0, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0),
        )
        self.playback_sat_out = Counter(
            "chorus_playback_sat_out", "Steps a running request sat out under scheduler.policy playback, by the tier "
            "it was in: full (more than max_slack_seconds of audio left: costs nothing), slack, low_slack or "
            "head_start (cut to keep a step in real time beside more urgent replies: past the box's capacity)",
            ["tier"], registry=r)
        self.realtime_rooms = Gauge(
            "chorus_realtime_rooms", "Rooms the box holds now with each still in real time: the engine loop gives "
            "each a frame per frame's duration (its measured period from one step's end to the next) and the codec "
            "turns their frames into audio at least as fast as it plays (rooms times "
            "chorus_codec_seconds_per_audio_second within 1)", registry=r)
        self.codec_seconds_per_audio_second = Gauge(
            "chorus_codec_seconds_per_audio_second", "Seconds the codec thread takes per second of one reply's audio "
            "(recent median, beside the engine's steps): it decodes one reply at a time, so it keeps up with at "
            "most 1 / this rooms", registry=r)
        # What a household hears on Home Assistant 2026.11, which plays a reply from its first chunk (0.1-0.5 s
        # after it comes): the first chunk written is its first sound, and a reply with no underrun was heard whole.
        self.reply_first_chunk = Histogram(
            "chorus_reply_first_chunk_seconds",
            "From a reply's text to its first audio chunk written to the client, after any hold before it (Home "
            "Assistant 2026.11 plays it 0.1-0.5 s later)", registry=r,
            buckets=(0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0),
        )
        self.replies_gap_free = Counter(
            "chorus_replies_gap_free", "Replies spoken to their end with no underrun: a listener playing from the "
            "first chunk heard no gap", registry=r)
        self.first_chunk_hold = Histogram(
            "chorus_playback_first_chunk_hold_seconds",
            "How long a reply's first chunk waited before it was written, so that a reply made slower than it is "
            "spoken then plays with no gap (scheduler.max_first_audio_seconds)", registry=r,
            buckets=(0.01, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0),
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
