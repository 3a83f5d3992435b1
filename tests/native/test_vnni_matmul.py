"""The compressed-weight kernel (native/vnni_matmul.hpp) against a reference of its arithmetic written here in
numpy: activations quantised to int8 per row and group (scale = max |x| / 127, round half to even), integer dot
products with the weights' codes, then the scales. Exact in the integers, so the tolerance is float32 rounding;
and against the float product of the dequantised weights, within the activations' quantisation error. With f32
activations (int8_f32) it is that float product within float32 rounding. The AVX2 and AVX-VNNI builds
(native/avx2_matmul.cpp, native/avxvnni_matmul.cpp) give the AVX-512 build's bits: checked side by side where all
run (AVX-VNNI as its EVEX twin), and the AVX2 build alone under the emulated Haswell (.ci/avx2)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wyoming_chorus.native_module import _native

pytestmark = pytest.mark.skipif(not _native.native_matmul_available(),
                                reason="this CPU has neither AVX2 nor AVX-512 VNNI")


def quantise(x: np.ndarray, group: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes [rows, k] and scales [rows, k / group], as the kernel makes them (in float32)."""
    rows, k = x.shape
    xg = x.reshape(rows, k // group, group).astype(np.float32)
    amax = np.abs(xg).max(axis=2)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    inv = (np.float32(1) / scale).astype(np.float32)
    q = np.clip(np.rint(xg * inv[:, :, None]), -128, 127).astype(np.int64)
    return q.reshape(rows, k), scale


def reference(kind: str, q: np.ndarray, scale: np.ndarray, zero: np.ndarray, x: np.ndarray, group: int):
    """(y, bound): the kernel's arithmetic in float64, and a bound on float32 rounding of its sums."""
    n, k = q.shape
    xq, xs = quantise(x, group)
    groups = k // group
    dots = np.einsum("rgi,ngi->rng", xq.reshape(-1, groups, group), q.reshape(n, groups, group).astype(np.int64))
    sums = xq.reshape(-1, groups, group).sum(axis=2)  # [rows, groups]
    if kind == "int8":
        terms = (dots - zero.astype(np.int64)[None, :, None] * sums[:, None, :]) * xs[:, None, :]
        terms = terms * scale.astype(np.float64)[None, :, None]
    else:
        terms = dots * xs[:, None, :] * scale.reshape(n, groups)[None, :, :]
    return terms.sum(axis=2), np.abs(terms).sum(axis=2) * 1e-5 + 1e-30


def weights(rng, kind: str, n: int, k: int, group: int):
    if kind == "int8":
        q = rng.integers(0, 256, (n, k), dtype=np.int32)
        zero = rng.integers(0, 256, n).astype(np.float32)
        scale = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
    else:
        q = rng.integers(-8, 8, (n, k), dtype=np.int32)
        zero = np.zeros(n, np.float32)
        scale = rng.uniform(1e-3, 2e-2, (n, k // group)).astype(np.float32)
    return q, scale, zero


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["int8", "int4"]), tiles=st.integers(1, 3), groups=st.integers(1, 3),
       group=st.sampled_from([8, 16, 32, 128]), rows=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       zero_row=st.booleans())
@example(kind="int8", tiles=1, groups=1, group=8, rows=1, seed=0, zero_row=True)
@example(kind="int4", tiles=2, groups=3, group=128, rows=9, seed=1, zero_row=False)
def test_kernel_computes_its_quantised_arithmetic(kind, tiles, groups, group, rows, seed, zero_row):
    rng = np.random.default_rng(seed)
    n, k = 32 * tiles, group * groups
    q, scale, zero = weights(rng, kind, n, k, group)
    x = (rng.standard_normal((rows, k)) * rng.uniform(0.01, 100)).astype(np.float32)
    if zero_row:
        x[0] = 0  # an all-zero row (scale 1, codes 0) gives zeros
    y = _native.vnni_matmul(kind, q, scale, zero, x, group)
    expected, bound = reference(kind, q, scale, zero, x, group)
    assert y.shape == (rows, n) and y.dtype == np.float32
    assert np.all(np.abs(y - expected) <= bound), np.abs(y - expected).max()
    if zero_row:
        assert not y[0].any()


@pytest.mark.parametrize("kind", ["int8", "int4"])
def test_kernel_is_near_the_float_product(kind):
    """Against the dequantised weights in float64: the only error is the activations' rounding to int8, at most
    half a step of each group's scale per input."""
    rng = np.random.default_rng(3)
    n, k, group = 96, 512, 128
    q, scale, zero = weights(rng, kind, n, k, group)
    w = ((q - zero[:, None]) * scale[:, None] if kind == "int8"
         else q * np.repeat(scale, group, axis=1)).astype(np.float64)
    x = rng.standard_normal((5, k)).astype(np.float32)
    y = _native.vnni_matmul(kind, q, scale, zero, x, group)
    exact = x.astype(np.float64) @ w.T
    _, xs = quantise(x, group)
    step = np.repeat(xs, group, axis=1).astype(np.float64)  # [rows, k]: each input's quantisation step
    bound = (step / 2) @ np.abs(w).T + 1e-4 * np.abs(x) @ np.abs(w).T
    assert np.all(np.abs(y - exact) <= bound)
    assert np.abs(y - exact).max() > 0  # it does quantise: the bound is what is being checked


def test_a_row_does_not_depend_on_the_others():
    """Each output channel is finished by one thread in one order, whatever the rows beside it: the batch
    invariance the engine relies on (tests/native/test_batch_invariance.py checks it through the runner)."""
    rng = np.random.default_rng(4)
    q, scale, zero = weights(rng, "int8", 256, 1024, 128)
    x = rng.standard_normal((13, 1024)).astype(np.float32)
    together = _native.vnni_matmul("int8", q, scale, zero, x, 128)
    for r in range(13):
        alone = _native.vnni_matmul("int8", q, scale, zero, x[r:r + 1], 128)
        np.testing.assert_array_equal(together[r:r + 1], alone)


@settings(max_examples=20, deadline=None)
@given(tiles=st.integers(1, 3), k=st.sampled_from([8, 64, 1024]), rows=st.integers(1, 17),
       seed=st.integers(0, 2**32 - 1))
@example(tiles=2, k=1024, rows=17, seed=0)
def test_with_f32_activations_it_is_the_float_product_of_the_decompressed_weights(tiles, k, rows, seed):
    """int8_f32 (exact_matmul, the code predictor's heads): nothing quantised but the weights, so the product of
    the dequantised weights within float32 rounding, and each row alone as in any batch."""
    rng = np.random.default_rng(seed)
    n = 32 * tiles
    q, scale, zero = weights(rng, "int8", n, k, 8)
    x = (rng.standard_normal((rows, k)) * rng.uniform(0.01, 100)).astype(np.float32)
    y = _native.vnni_matmul("int8_f32", q, scale, zero, x, 8)
    w = (q - zero[:, None]).astype(np.float64) * scale.astype(np.float64)[:, None]
    exact = x.astype(np.float64) @ w.T
    bound = 1e-5 * (np.abs(x).astype(np.float64) @ np.abs(w).T) + 1e-30
    assert np.all(np.abs(y - exact) <= bound), np.abs(y - exact).max()
    for r in (0, rows - 1):
        np.testing.assert_array_equal(_native.vnni_matmul("int8_f32", q, scale, zero, x[r:r + 1], 8), y[r:r + 1])


@pytest.mark.parametrize("kind, n, k, group", [("int8", 48, 64, 32), ("int8", 32, 60, 20), ("int4", 32, 64, 24)])
def test_shapes_it_cannot_take_are_refused(kind, n, k, group):
    q, scale, zero = weights(np.random.default_rng(0), kind, n, k, group if k % group == 0 else k)
    if kind == "int4":
        scale = np.ones((n, k // group if k % group == 0 else 1), np.float32)
    with pytest.raises(ValueError):
        _native.vnni_matmul(kind, q, scale, zero, np.ones((1, k), np.float32), group)


# Cases for the builds side by side: every row count the passes split differently (AVX-512: 4 rows a pass, 8
# with f32 activations; AVX2 and AVX-VNNI: 2 and 3), INT8 codes 0 (-128 once centred, the one value whose sign
# cannot be flipped in a byte) against negative activations, activations at the clamp, groups of 8 and 128, INT4's
# extremes.
SIDE_BY_SIDE = """
import sys
import numpy as np
from wyoming_chorus.native_module import _native
rng = np.random.default_rng(7)
results = {"isa": np.array(_native.matmul_isa())}
for rows in range(1, 10):
    for kind, group in (("int8", 8), ("int8", 128), ("int4", 32), ("int8_f32", 128)):
        n, k = 64, 256
        if kind == "int4":
            q = rng.integers(-8, 8, (n, k)).astype(np.int32)
            q[0], q[1] = -8, 7
            scale = rng.uniform(1e-3, 2e-2, (n, k // group)).astype(np.float32)
            zero = np.zeros(n, np.float32)
        else:
            q = rng.integers(0, 256, (n, k)).astype(np.int32)
            q[0], q[1] = 0, 255
            scale = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
            zero = rng.integers(0, 256, n).astype(np.float32)
        x = (rng.standard_normal((rows, k)) * 10).astype(np.float32)
        x[0, ::2] = -np.abs(x[0, ::2]).max()  # half the first row at -127 once quantised
        results[f"{kind}-{group}-{rows}"] = _native.vnni_matmul(kind, q, scale, zero, x, group)
np.savez(sys.argv[1], **results)
"""


@pytest.mark.skipif(_native.matmul_isa() != "avx512", reason="all builds run only on an AVX-512 VNNI CPU")
def test_the_avx2_and_avx_vnni_builds_give_the_avx512_builds_bits(tmp_path):
    """Households' AVX2 and AVX-VNNI boxes speak exactly as an AVX-512 VNNI CPU would: the same integers, the same
    float order. (The AVX-VNNI build runs here as its EVEX twin, the same code: avxvnni_matmul.cpp.)"""
    outputs = {}
    for isa in ("", "avx2", "avxvnni"):
        path = tmp_path / f"{isa or 'best'}.npz"
        # From tmp_path: in the repository's root `import wyoming_chorus` would find the source tree, not the
        # installed package with its compiled runner (CI installs it, not in place).
        subprocess.run([sys.executable, "-c", SIDE_BY_SIDE, str(path)], check=True, cwd=tmp_path,
                       env={**os.environ, "CHORUS_MATMUL_ISA": isa})
        outputs[isa] = np.load(path)
    assert [str(outputs[isa]["isa"]) for isa in ("", "avx2", "avxvnni")] == ["avx512", "avx2", "avxvnni"]
    cases = [name for name in outputs[""].files if name != "isa"]
    assert len(cases) == 36
    for isa in ("avx2", "avxvnni"):
        for name in cases:
            np.testing.assert_array_equal(outputs[isa][name], outputs[""][name], err_msg=f"{isa}: {name}")
