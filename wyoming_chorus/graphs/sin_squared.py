"""sin(u)^2 as an OpenVINO subgraph the CPU plugin runs as vector code: SnakeBeta's sine in the codec decoder."""

from __future__ import annotations

import math

import numpy as np
import openvino as ov
import openvino.opset15 as ops

_TAYLOR = tuple((-1) ** i / math.factorial(2 * i + 1) for i in range(6))  # sin(r) = r * sum c_i r^(2i)


def sin_squared(u: ov.Output) -> ov.Output:
    """sin(u)^2 from Round, Multiply and Add only.

    The CPU plugin has no vector kernel for Sin: its scalar reference kernel took 40% of the decode time. This
    form runs as vector code (one fused kernel where the plugin tokenizes it). sin^2 has period pi, so u is reduced
    to r = u - pi * round(u / pi) in [-pi/2, pi/2], where the Taylor polynomial of sin to r^11 is within 6e-8.
    """
    turns = ops.round(ops.multiply(u, np.float32(1 / np.pi)), "half_to_even")
    r = ops.subtract(u, ops.multiply(turns, np.float32(np.pi)))
    r2 = ops.multiply(r, r)
    poly = ops.constant(np.float32(_TAYLOR[-1]))
    for coefficient in reversed(_TAYLOR[:-1]):  # Horner in r^2
        poly = ops.add(ops.multiply(poly, r2), np.float32(coefficient))
    sin = ops.multiply(poly, r)
    return ops.multiply(sin, sin).output(0)
