"""Device checks before compiling: which KV precisions a CPU can run (from its capabilities, for CPUs this machine
is not), a missing device, and the one-line SetupError the runner raises for a missing GPU on this machine (the KV
precision's: tests/engine/test_engine.py)."""
from __future__ import annotations

import pytest

from wyoming_chorus import _native
from wyoming_chorus.config_checks import device as _config_device
from wyoming_chorus.cpu import CpuFacts
from wyoming_chorus.engine.device import available_devices, resolve_device
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions
from wyoming_chorus.errors import SetupError
from wyoming_chorus.export.builtin import resolve_model
from wyoming_chorus.modeldir.manifest import ModelDir

# OPTIMIZATION_CAPABILITIES and the default inference precision as openvino 2026.4.1 reports them (AVX2: this
# machine; the others as the CPU plugin lists them: BF16 with avx512_bf16, FP16 with avx512_fp16).
AVX2 = CpuFacts(("FP32", "INT8", "BIN", "EXPORT_IMPORT"), "f32", "avx2")
AVX512_BF16 = CpuFacts(("BF16", "WINOGRAD", "FP32", "INT8", "BIN", "EXPORT_IMPORT"), "bf16", "avx512_bf16")
AMX_FP16 = CpuFacts(("BF16", "WINOGRAD", "FP32", "FP16", "INT8", "BIN", "EXPORT_IMPORT"), "bf16", "amx_bf16")

F32_KV = {"u8": "u8", "f16": "f16", "f32": "f32"}
BF16_KV = {"u8": "u8", "f16": "bf16", "bf16": "bf16"}


@pytest.mark.parametrize("hint", ["", "f32", "bf16", "f16"])
def test_an_avx2_cpu_computes_in_f32_and_runs_u8_f16_f32_whatever_the_hint(hint):
    assert AVX2.inference_precision(hint) == "f32"
    assert AVX2.kv_caches(hint) == F32_KV
    assert AVX2.kv_error("bf16", hint) == (
        "engine.kv_precision bf16: this CPU (avx2) cannot run a bf16 KV cache; it can run u8, f16, f32")


def test_an_avx512_bf16_cpu_runs_bf16_by_default_and_f32_only_with_f32_inference():
    assert AVX512_BF16.kv_caches("") == BF16_KV == AVX512_BF16.kv_caches("bf16")
    assert AVX512_BF16.kv_caches("f32") == F32_KV
    assert AVX512_BF16.kv_caches("f16") == F32_KV  # no FP16: the hint is ignored, as on AVX2
    assert AVX512_BF16.kv_error("bf16", "") is None and AVX512_BF16.kv_error("f16", "") is None
    assert AVX512_BF16.kv_error("f32", "") == (
        "engine.kv_precision f32: this CPU (avx512_bf16) cannot run an f32 KV cache at its default bf16 inference; "
        "it can run u8, f16 (kept as bf16), bf16, or f32 with engine.inference_precision f32")
    assert AVX512_BF16.kv_error("bf16", "f32").endswith(
        "cannot run a bf16 KV cache at f32 inference; it can run u8, f16, f32, or bf16 with "
        "engine.inference_precision bf16")


def test_the_default_is_the_measured_one_not_the_capabilities_guess():
    # BF16 is also listed where the plugin still defaults to f32 (avx2_vnni_2)
    bf16_listed_f32_default = CpuFacts(AVX512_BF16.capabilities, "f32", "x")
    assert bf16_listed_f32_default.kv_caches("") == F32_KV
    assert bf16_listed_f32_default.kv_caches("bf16") == BF16_KV


def test_f16_inference_keeps_u8_or_f16_caches():
    assert AMX_FP16.kv_caches("f16") == {"u8": "u8", "f16": "f16"}
    assert "f32 with engine.inference_precision f32" in AMX_FP16.kv_error("f32", "f16")


def test_an_unknown_inference_precision_is_a_value_error():
    with pytest.raises(ValueError):
        AVX2.kv_caches("u8")


@pytest.mark.parametrize("requested, available, device", [
    ("AUTO", ["CPU"], "CPU"),
    ("AUTO", ["CPU", "GPU"], "GPU"),
    ("AUTO", ["CPU", "GPU.0", "GPU.1"], "GPU"),
    ("CPU", ["CPU", "GPU"], "CPU"),
    ("GPU", ["CPU", "GPU"], "GPU"),
    ("GPU", ["CPU", "GPU.0", "GPU.1"], "GPU"),
    ("GPU.0", ["CPU", "GPU"], "GPU.0"),
    ("GPU.1", ["CPU", "GPU.0", "GPU.1"], "GPU.1"),
])
def test_resolve_device(requested, available, device):
    assert resolve_device(requested, available) == device


@pytest.mark.parametrize("requested, available", [("GPU", ["CPU"]), ("GPU.1", ["CPU"]), ("GPU.1", ["CPU", "GPU"])])
def test_a_device_that_is_not_there_names_those_that_are(requested, available):
    with pytest.raises(SetupError) as error:
        resolve_device(requested, available)
    assert str(error.value) == (f"engine.device {requested}: OpenVINO sees no such device here; devices present: "
                                f"{', '.join(available)} (use CPU or AUTO)")


# ---- on this machine: the runner raises the one-line error before compiling anything ----------------------------


@pytest.mark.parametrize("device", ["GPU", "GPU.1"])
def test_the_runner_refuses_a_missing_gpu(device):
    present = available_devices()
    if device in present or (device == "GPU" and any(name.startswith("GPU") for name in present)):
        pytest.skip(f"this machine has {device}")
    with pytest.raises(SetupError) as error:
        PagedRunner(ModelDir(resolve_model("builtin:tiny")), RunnerOptions(device=device, num_blocks=4))
    message = str(error.value)
    assert message.startswith(f"engine.device {device}:") and ", ".join(present) in message
    assert "\n" not in message and error.value.__context__ is None  # no plugin exception underneath


# ---- config and the native runner accept the same device strings ----------------------------------------------


DEVICE_STRINGS = ["CPU", "cpu", "GPU", "gpu", "GPU.0", "GPU.1", "GPU.12", "Gpu.3", "AUTO", "auto", "GPU.", "GPU.x",
                  "GPU.-1", "GPU1", "NPU", "CPU.0", "HETERO:GPU,CPU", "MULTI:CPU", "", " CPU"]


@pytest.mark.parametrize("value", DEVICE_STRINGS)
def test_config_and_the_native_runner_accept_the_same_devices(value):
    """Whatever engine.device the config takes reaches the native runner (after AUTO is resolved, with every GPU
    present) as a name it accepts; what the config refuses, the runner refuses too. The runner's own check comes
    before compiling: a name it accepts fails only later, at compile time, for want of a GPU here."""
    try:
        configured = _config_device(value)
    except ValueError:
        configured = None
    model = ModelDir(resolve_model("builtin:tiny"))
    tables = model.embeddings
    native = configured and resolve_device(configured, ["CPU", "GPU.0", "GPU.1", "GPU.3", "GPU.12"])
    name = native or value
    try:
        _native.Runner(str(model / "talker.xml"), str(model / "code_predictor.xml"), tables["codec_embedding"],
                       tables["cp_codec_embedding"], name, "u8", "", 4, 0, model.manifest.eos_id,
                       model.manifest.codebook_size)
        accepted = True
    except ValueError as error:  # the runner's name check (std::invalid_argument)
        assert "device must be" in str(error)
        accepted = False
    except RuntimeError:  # past the name check: compiling for a GPU that is not here
        accepted = True
    assert accepted == (configured is not None), (value, configured)
