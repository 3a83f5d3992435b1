"""The talker's and code predictor's precision when engine.inference_precision leaves it to the engine: f32 for
INT8/INT4 weights on a CPU that computes in bf16 by default (measured faster there at every batch up to 16)."""
from __future__ import annotations

import pytest

from wyoming_chorus.engine.device import CpuFacts, cpu_facts
from wyoming_chorus.engine.lm_precision import lm_precision

AMX = CpuFacts(("BF16", "FP32", "INT8"), "bf16", "amx_bf16")
AVX2 = CpuFacts(("FP32",), "f32", "avx2")


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_compressed_weights_compute_in_f32_where_the_default_is_bf16(weights):
    chosen = lm_precision("", weights, "CPU", AMX)
    assert chosen.hint == "f32" and weights.upper() in chosen.reason


def test_the_default_stays_everywhere_else():
    assert lm_precision("", "f16", "CPU", AMX).hint == ""  # f16 weights reach the AMX tiles in bf16
    assert lm_precision("", "f32", "CPU", AMX).hint == ""
    assert lm_precision("", "int8", "CPU", AVX2).hint == ""  # f32 already
    assert lm_precision("", "int8", "GPU", None).hint == ""  # the GPU was not measured
    assert lm_precision("", "int8", "CPU", AMX, kv_precision="bf16").hint == ""  # f32 cannot keep a bf16 cache


@pytest.mark.parametrize("requested", ["f32", "bf16"])
def test_an_explicit_setting_wins(requested):
    chosen = lm_precision(requested, "int8", "CPU", AMX)
    assert chosen.hint == requested and "engine.inference_precision" in chosen.reason


def test_the_engine_serves_a_compressed_model_in_f32(tmp_path):
    """Through EngineCore on an INT8 copy of the tiny model: its runner computes in f32 on any CPU (on one whose
    default is bf16 only because of this rule), while the codec keeps its own precision."""
    pytest.importorskip("nncf", reason="weight compression needs the optional extra: pip install '.[compress]'")
    import shutil

    from wyoming_chorus.config import EngineSettings
    from wyoming_chorus.engine.core import EngineCore
    from wyoming_chorus.export.builtin import resolve_model
    from wyoming_chorus.export.compress import compress_model_dir
    from wyoming_chorus.modeldir.manifest import ModelDir

    directory = tmp_path / "tiny"
    shutil.copytree(resolve_model("builtin:tiny"), directory)
    compress_model_dir(directory, "int8")
    core = EngineCore(ModelDir(directory), EngineSettings(device="CPU"))
    assert cpu_facts().inference_precision(core.lm_precision.hint) == "f32"
    kernels = {kernel for _, layer, kernel, _ in core.runner.kernels() if layer.startswith("FullyConnected")}
    assert kernels and not any("bf16" in kernel for kernel in kernels), kernels  # e.g. brgemm_avx512_f32
