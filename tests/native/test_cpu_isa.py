"""The CPU the plugin sees, and the kernels it then runs.

`.ci/avx2` runs part of this suite under `qemu-x86_64 -cpu Haswell-v4`: a CPU with AVX2 and nothing newer (no
AVX-512, no bf16, no AMX), what most households' boxes have, whatever CPU the CI machine has. It sets
CHORUS_EXPECT_ISA=avx2, and these tests then check that the emulation holds: if it let AVX-512 through, that run
would test the host's path again while claiming the AVX2 one. Without the variable they check the same rules
against the CPU at hand.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from kernels import codec_kernels

from chorus_tools.engine_bench import start_batch
from wyoming_chorus import _native
from wyoming_chorus.app import model_dir
from wyoming_chorus.config import EngineSettings
from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.engine.runner import PagedRunner, RunnerOptions

EXPECTED = os.environ.get("CHORUS_EXPECT_ISA", "")
ISA_ORDER = ("amx_bf16", "avx512_bf16", "avx512f", "avx2")  # most telling first, as /proc/cpuinfo names them
# How a kernel's name carries its ISA (brgemm_avx512_amx_bf16, jit_avx2_f32, brgconv_avx512_1x1_bf16) and the widest
# vector family each CPU level may run.
KERNEL_FAMILY = {"amx_bf16": "amx", "avx512_bf16": "avx512", "avx512f": "avx512", "avx2": "avx2"}
FAMILIES = ("amx", "avx512", "avx2")


def proc_cpuinfo_isa() -> str:
    text = Path("/proc/cpuinfo").read_text()
    found = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    flags = set(found.group(1).split()) if found else set()
    return next((isa for isa in ISA_ORDER if isa in flags), "")


def test_cpuid_names_the_cpu_the_plugin_computes_for():
    isa = _native.cpu_isa()
    if EXPECTED:
        assert isa == EXPECTED
    else:  # on a real CPU (no emulator) the kernel's flags and CPUID agree
        assert isa == proc_cpuinfo_isa()
    facts = cpu_facts()
    assert facts.isa == isa
    # The plugin computes in bf16 by default exactly where the CPU has avx512_bf16 (AMX CPUs have it too).
    assert (facts.default_inference == "bf16") == (isa in ("amx_bf16", "avx512_bf16"))
    assert ("BF16" in facts.capabilities) == (isa in ("amx_bf16", "avx512_bf16"))


@pytest.fixture(scope="module")
def kernels() -> list[tuple[str, str, str, str]]:
    """Every op's (graph, layer, kernel, precision) of the tiny model at the plugin's defaults, after a step."""
    model = model_dir(EngineSettings())
    runner = PagedRunner(model, RunnerOptions(device="CPU", num_blocks=16))
    core, _ = start_batch(model, runner, batch=2, context=8, frame_cap=4)
    core.step()
    return runner.kernels() + codec_kernels(model, "auto")


def test_every_kernel_the_plugin_runs_is_of_the_cpus_isa(kernels):
    """No kernel wider than the CPU (one would crash a real AVX2 box with an illegal instruction), and the talker,
    code predictor and codec each run kernels of the CPU's own vector family, not only reference code."""
    family = KERNEL_FAMILY[EXPECTED or _native.cpu_isa()]
    allowed = FAMILIES[FAMILIES.index(family):]
    too_wide = sorted({kernel for _, _, kernel, _ in kernels
                       if any(f in kernel for f in FAMILIES) and not any(f in kernel for f in allowed)})
    assert not too_wide, f"kernels wider than {family}: {too_wide}"
    own = {"avx512", "amx"} if family in ("avx512", "amx") else {family}
    for graph in ("talker", "code_predictor", "codec"):
        names = {kernel for g, _, kernel, _ in kernels if g == graph}
        assert any(f in name for name in names for f in own), f"{graph} runs no {family} kernel: {sorted(names)}"
