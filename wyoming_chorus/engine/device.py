"""What this machine's OpenVINO devices can run, asked before anything is compiled.

A device that is not there, or a KV cache type the CPU plugin's PagedAttention cannot keep, would otherwise surface
as a plugin traceback from deep inside compile_model. Here both become one SetupError that names what does work;
which KV cache types the CPU can keep at which inference precision is the CPU's own fact (wyoming_chorus/cpu.py).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import openvino as ov

from wyoming_chorus.cpu import cpu_facts
from wyoming_chorus.errors import SetupError


def resolve_device(requested: str, available: Sequence[str]) -> str:
    """The device to compile for: AUTO is a GPU when OpenVINO sees one, else the CPU (the AUTO plugin itself is not
    used: it may move a model between devices, while the paged cache is allocated on one). GPU and GPU.N must be
    present; GPU.0 is also the single GPU that OpenVINO lists as plain "GPU"."""
    gpus = [name for name in available if name.startswith("GPU")]
    if requested == "AUTO":
        return "GPU" if gpus else "CPU"
    present = requested in available or (requested == "GPU" and gpus) or (requested == "GPU.0" and "GPU" in gpus)
    if not present:
        fallback = "CPU or AUTO" if "CPU" in available else "one of them"
        raise SetupError(f"engine.device {requested}: OpenVINO sees no such device here; devices present: "
                         f"{', '.join(available) or 'none'} (use {fallback})")
    return requested


def check_device(requested: str, kv_precision: str, inference_precision: str) -> str:
    """The device the runner compiles for, after checking that it exists and can keep a kv_precision cache at that
    inference precision; raises SetupError otherwise. KV types are checked on the CPU only: the GPU plugin's rules
    were not measured, so there its compile decides."""
    device = resolve_device(requested, available_devices())
    if device == "CPU":
        error = cpu_facts().kv_error(kv_precision, inference_precision)
        if error:
            raise SetupError(error)
    return device


@functools.cache
def available_devices() -> tuple[str, ...]:
    return tuple(ov.Core().available_devices)
