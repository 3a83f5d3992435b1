"""The serving loop: continuous batching over a paged KV cache. Below the front end; reads modeldir only.

core (the engine thread: messages in at step boundaries, schedule -> runner.step -> update), messages (what may
cross into that thread), scheduler + blocks + sequence (admission, preemption, the block pool), runner (the native
paged runner: talker + code predictor), audio_output + streaming_codec (the codec thread: frames -> PCM), pacing
(the playback policy the scheduler, the engine thread and the codec ask: playback_policy, urgent_steps,
first_audio_hold), device (which KV precisions a device can run).
"""
