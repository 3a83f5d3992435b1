"""The talker's and code predictor's precision when engine.inference_precision leaves it to the engine: f32 for
INT8/INT4 weights wherever the plugin's default is bf16: on AMX (measured faster there at every batch up to 16) and
on AVX-512 bf16 without AMX (as fast, and a batch speaks as each request alone: test_batch_invariance.py)."""
from __future__ import annotations

import pytest

from wyoming_chorus.cpu import CpuFacts, cpu_facts
from wyoming_chorus.lm_precision import (
    INT4_BATCHED_FROM,
    INT4_BATCHED_GROUP,
    INT8_ACTIVATION_GROUP,
    ActivationGroups,
    activation_groups,
    lm_precision,
)

AMX = CpuFacts(("BF16", "FP32", "INT8"), "bf16", "amx_bf16")
AVX512_BF16 = CpuFacts(("BF16", "FP32", "INT8"), "bf16", "avx512_bf16")  # e.g. AMD Zen 4
AVX2 = CpuFacts(("FP32",), "f32", "avx2")


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_compressed_weights_compute_in_f32_where_the_default_is_bf16(weights):
    chosen = lm_precision("", weights, "CPU", AMX)
    assert chosen.hint == "f32" and weights.upper() in chosen.reason and "AMX" in chosen.reason


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_compressed_weights_compute_in_f32_without_amx_too(weights):
    chosen = lm_precision("", weights, "CPU", AVX512_BF16)
    assert chosen.hint == "f32" and "who shares its step" in chosen.reason


def test_the_default_stays_everywhere_else():
    assert lm_precision("", "f16", "CPU", AMX).hint == ""  # f16 weights reach the AMX tiles in bf16
    assert lm_precision("", "f32", "CPU", AMX).hint == ""
    assert lm_precision("", "int8", "CPU", AVX2).hint == ""  # f32 already
    assert lm_precision("", "int8", "GPU", None).hint == ""  # the GPU was not measured
    assert lm_precision("", "int8", "CPU", AMX, kv_precision="bf16").hint == ""  # f32 cannot keep a bf16 cache
    assert lm_precision("", "int4", "CPU", AVX512_BF16, kv_precision="bf16").hint == ""
    assert lm_precision("", "f16", "CPU", AVX512_BF16).hint == ""


def test_int8_activations_are_quantised_in_longer_groups_on_avx512_bf16():
    assert activation_groups("int8", "CPU", AVX512_BF16) == ActivationGroups(INT8_ACTIVATION_GROUP)
    assert INT8_ACTIVATION_GROUP == 256


def test_int4_predictor_takes_longer_groups_from_batch_4_on_avx512_bf16():
    # Not longer than the weights' 128-groups (that turns the quantisation off); batch 1 keeps the plugin's 32.
    assert activation_groups("int4", "CPU", AVX512_BF16) == ActivationGroups(None, INT4_BATCHED_GROUP,
                                                                            INT4_BATCHED_FROM)
    assert (INT4_BATCHED_GROUP, INT4_BATCHED_FROM) == (128, 4)


@pytest.mark.parametrize(("weights", "device", "facts"), [
    ("f16", "CPU", AVX512_BF16),   # float weights: no activation quantisation to tune
    ("int8", "CPU", AMX),          # not measured there
    ("int4", "CPU", AMX),
    ("int8", "CPU", AVX2),
    ("int4", "CPU", AVX2),
    ("int8", "GPU", None),
])
def test_the_plugins_activation_group_stays_everywhere_else(weights, device, facts):
    assert activation_groups(weights, device, facts) == ActivationGroups()


@pytest.mark.parametrize("requested", ["f32", "bf16"])
def test_an_explicit_setting_wins(requested):
    chosen = lm_precision(requested, "int8", "CPU", AMX)
    assert chosen.hint == requested and "engine.inference_precision" in chosen.reason


def test_the_engine_serves_a_compressed_model_at_the_chosen_precision(tmp_path):
    """Through EngineCore on an INT8 copy of the tiny model: its matrix products compute in f32 everywhere,
    by this rule where the plugin's default is bf16 (AMX, AVX-512 bf16) and by the plugin's own on AVX2."""
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    import shutil

    from wyoming_chorus.config import EngineSettings
    from wyoming_chorus.engine.core import EngineCore
    from wyoming_chorus.export.builtin import resolve_model
    from wyoming_chorus.export.compress import compress_model_dir
    from wyoming_chorus.modeldir.manifest import ModelDir

    directory = tmp_path / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    compress_model_dir(directory, "int8", codec_twin=False)  # the language models are what this serves
    core = EngineCore(ModelDir(directory), EngineSettings(device="CPU"))
    facts = cpu_facts()
    assert facts.inference_precision(core.lm_precision.hint) == "f32"
    products = ("FullyConnected", "CompressedMatMul")  # the plugin's, or ours (engine.native_matmul, f32 only)
    kernels = {kernel for _, layer, kernel, _ in core.runner.kernels() if layer.startswith(products)}
    # e.g. brgemm_avx512_f32 on AMX (brgemm_avx512_bf16 before this rule); chorus_vnni_avx512 and chorus_exact_avx512
    # where the CPU has AVX-512 VNNI
    assert kernels and not any("bf16" in kernel for kernel in kernels), kernels
