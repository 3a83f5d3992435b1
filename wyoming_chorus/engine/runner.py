"""The native runner of one model directory: a scheduled batch goes in as a StepBatch, per-entry outputs come back.

The native runner executes what the scheduler decided and nothing else; this module and step_batch.py are the only
places that know both sides: which rows of which Sequence go in, and how the per-entry outputs map back.
"""
from __future__ import annotations

from dataclasses import dataclass

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.device import check_device
from wyoming_chorus.engine.scheduler import ScheduledEntry
from wyoming_chorus.engine.sequence import StepOutput
from wyoming_chorus.engine.step_batch import StepBatch
from wyoming_chorus.lm_precision import ActivationGroups, activation_groups
from wyoming_chorus.modeldir.manifest import ModelDir
from wyoming_chorus.native_module import _native


@dataclass(frozen=True)
class RunnerOptions:
    device: str = "AUTO"
    kv_precision: str = "u8"
    inference_precision: str = ""
    num_blocks: int = 0
    kv_cache_bytes: int = 256 << 20
    # DYNAMIC_QUANTIZATION_GROUP_SIZE of the talker and the code predictor's body: None = by the rule of
    # lm_precision.activation_groups (this CPU and the weights' format).
    activation_groups: ActivationGroups | None = None
    # engine.native_matmul: compressed-weight products on the project's kernel where the CPU has AVX-512 VNNI or AVX2
    # and the language models compute in f32 (native/compressed_matmul.hpp); elsewhere the plugin's, whatever this says.
    native_matmuls: bool = True


_NEVER = 1 << 62  # min_new_tokens no reply reaches


class PagedRunner:
    """Owns the native runner of one model directory."""

    def __init__(self, model: ModelDir, options: RunnerOptions):
        """Raises SetupError, before compiling anything, for a device that is not there or a KV precision it
        cannot run."""
        device = check_device(options.device, options.kv_precision, options.inference_precision)
        manifest, embeddings = model.manifest, model.embeddings
        groups = options.activation_groups
        if groups is None:
            groups = activation_groups(manifest.weights, device, cpu_facts() if device == "CPU" else None)
        self.eos_id = manifest.eos_id
        # Random weights make noise, not speech: such a model's replies end at their frame cap (random_model_frames,
        # or a benchmark's natural length), never at an end-of-speech code drawn by chance, so a test or benchmark
        # gets replies as long as it asked for, whatever the sampling (and the prompt layout) draws.
        self.min_new_tokens = _NEVER if manifest.random_weights else manifest.min_new_tokens
        self._native = _native.Runner(
            str(model / "talker.xml"),
            str(model / "code_predictor.xml"),
            embeddings["codec_embedding"],
            embeddings["cp_codec_embedding"],
            device,
            options.kv_precision,
            options.inference_precision,
            options.num_blocks,
            options.kv_cache_bytes,
            self.eos_id,
            manifest.codebook_size,  # ids from here up are control ids
            groups.group,
            groups.batched,
            groups.batched_from,
            options.native_matmuls,
        )
        self.hidden_size = self._native.hidden_size
        self.block_size = self._native.block_size
        self.num_blocks = self._native.num_blocks
        self.bytes_per_block = self._native.bytes_per_block
        self.device = self._native.device
        self.kv_precision = self._native.kv_precision
        # The code predictor's 15 output heads run as models of their own (native/predictor_heads.hpp): False only
        # for a graph of another shape, served as it is.
        self.predictor_heads_split = self._native.predictor_heads_split
        # As the plugin compiled the talker (its default when the rule left it alone; 0: activations not quantised).
        self.activation_group = self._native.dynamic_quantization_group_size
        self.activation_groups = groups  # as asked for (None: the plugin's default)
        # (talker, code predictor body): MatMuls on the project's kernel; (0, 0) where it does not apply.
        talker, predictor = self._native.native_matmuls
        self.native_matmuls = (talker, predictor)

    def kernels(self) -> list[tuple[str, str, str, str]]:
        """(graph, layer type, kernel, precision) of every op the plugin runs: which ISA a report's figures really
        ran on (some kernels ignore ONEDNN_MAX_CPU_ISA). Read after at least one step."""
        return self._native.kernels()

    def step(self, entries: list[ScheduledEntry], want_logits: bool = False) -> StepOutput:
        batch = StepBatch.of(entries, self.min_new_tokens, want_logits)
        codes, is_eos, next_embeds, logits = self._native.step(batch)
        return StepOutput(codes=codes, is_eos=is_eos.astype(bool), next_embeds=next_embeds, logits=logits)
