"""What is being served, in words, for the start-up log: the model, the device and its precision, the KV pool."""
from __future__ import annotations

from wyoming_chorus.config import EngineSettings
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.codec_precision import CodecChoice
from wyoming_chorus.engine.runner import PagedRunner
from wyoming_chorus.lm_precision import LmPrecision
from wyoming_chorus.modeldir.manifest import ModelDir


def summary(model: ModelDir, runner: PagedRunner, codec: CodecChoice, settings: EngineSettings,
            lm: LmPrecision | None = None) -> list[str]:
    """`lm`: the talker's and code predictor's precision as the engine chose it (wyoming_chorus/lm_precision.py)."""
    manifest = model.manifest
    random_note = ": RANDOM weights, its voices make noise, not speech" if manifest.random_weights else ""
    device = runner.device
    if device == "CPU":
        facts = cpu_facts()
        hint = lm.hint if lm is not None else settings.inference_precision
        device = f"CPU ({facts.isa}), inference {facts.inference_precision(hint)}"
        if lm is not None and lm.hint and not settings.inference_precision:
            device += f" ({lm.reason})"
    blocks, block = runner.num_blocks, runner.block_size
    # A typical reply: the prompt (~30 rows) and 10 s of speech at 12.5 frames per second.
    per_room = -(-(30 + 125) // block)
    return [
        f"model {manifest.name} ({manifest.model_type}, {manifest.weights_label} weights) from {model.path}"
        f"{random_note}",
        f"device {device}, KV cache {runner.kv_precision}: {blocks} blocks of {block} tokens "
        f"({blocks * block} tokens, {blocks * runner.bytes_per_block / 2**20:.0f} MiB), "
        f"room for {blocks // per_room} replies of 10 s at once ({settings.max_batch} run in one batch)",
        f"codec decoder in {codec.precision}: {codec.reason}",
    ]
