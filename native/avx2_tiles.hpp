#pragma once
// What the two 256-bit builds of the compressed-weight kernel share (avx2_matmul.cpp: AVX2; avxvnni_matmul.cpp:
// AVX-VNNI): a tile of 32 output channels as four 8-channel accumulators per row, and the INT8 and INT4 tiles whole
// (the builds differ only in the dot products). Internal to those files.
#include <immintrin.h>

#include <algorithm>

#include "matmul_tiles.hpp"

// Only these functions use AVX2: the module is built for the baseline x86-64.
#define CHORUS_AVX2 __attribute__((target("avx2,fma")))

namespace matmul::avx256 {

constexpr std::size_t kBlocks = kTile / 8;  // 256-bit accumulators per row of a tile (8 channels each)

// Every accumulator of R rows set to zero.
template <class V, std::size_t R>
CHORUS_AVX2 inline __attribute__((always_inline)) void zeroed(V (&v)[R][kBlocks]) {
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
        _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) v[r][j] = V{};
    }
}

// The tile's 32 sums of R rows into y, times the output channels' scales (INT8: one per channel).
template <std::size_t R>
CHORUS_AVX2 inline __attribute__((always_inline)) void store_scaled(const PackedWeights& w, std::size_t row0,
                                                                    std::size_t tile,
                                                                    const __m256 (&sums)[R][kBlocks], float* y) {
    _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
        const __m256 scale = _mm256_loadu_ps(w.scale.get() + tile * kTile + 8 * j);
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            _mm256_storeu_ps(y + (row0 + r) * w.n + tile * kTile + 8 * j, _mm256_mul_ps(sums[r][j], scale));
        }
    }
}

// One tile of 32 output channels for R rows of INT8 asymmetric weights: a 128-byte input step is four 32-byte
// loads (8 channels' 4 inputs each), each feeding R rows. `Dot::weights(load)` turns a load into what `Dot::add(acc,
// weights, x)` takes to add the quadruples' dot products with x (once per load, for the R rows);
// `Dot::zero_factor(zero)` is f with acc + f * sum(x) the true dot product of (q - zero) and x.
template <class Dot, std::size_t R>
CHORUS_AVX2 void int8_tile(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    const std::size_t groups = w.k / w.group, steps = w.group / 4;
    const uint8_t* wt = w.data.get() + tile * kTile * w.k;
    const int32_t* zero = w.zero.get() + tile * kTile;
    __m256 out[R][kBlocks];
    zeroed(out);
    for (std::size_t g = 0; g < groups; ++g) {
        __m256i acc[R][kBlocks];
        zeroed(acc);
        const int8_t* x[R];
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) x[r] = a.q.data() + (row0 + r) * w.k + g * w.group;
        const uint8_t* wg = wt + g * steps * kTile * 4;
        for (std::size_t s = 0; s < steps; ++s) {
            __m256i xs[R];
            _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) xs[r] = _mm256_set1_epi32(quad(x[r] + 4 * s));
            _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                const auto weights =
                    Dot::weights(_mm256_load_si256(reinterpret_cast<const __m256i*>(wg + s * 128 + 32 * j)));
                _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) Dot::add(acc[r][j], weights, xs[r]);
            }
        }
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            const std::size_t i = (row0 + r) * groups + g;
            const __m256i sum = _mm256_set1_epi32(a.sum[i]);
            const __m256 scale = _mm256_set1_ps(a.scale[i]);
            _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                const __m256i factor =
                    Dot::zero_factor(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero + 8 * j)));
                const __m256i dot = _mm256_add_epi32(acc[r][j], _mm256_mullo_epi32(factor, sum));
                out[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, out[r][j]);
            }
        }
    }
    store_scaled<R>(w, row0, tile, out, y);
}

// One tile of 32 output channels for R rows of INT4 symmetric weights, a scale per channel and group: a 128-byte
// step holds two input steps of 32 channels (low nibbles, high nibbles), four 32-byte loads of 8 channels each.
// `Dot::add(part, low, high, x0, x1)` adds to a partial sum the quadruples' dot products of the low nibbles with x0
// and the high ones with x1, and `Dot::widen(acc, part)` adds that into the group's int32 sums every `Dot::kRun`
// steps (each build its own instructions; the same integers). Then the sums less the +8 every weight is stored
// with, times the channels' scales and the row's.
template <class Dot, std::size_t R>
CHORUS_AVX2 void int4_tile(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    const std::size_t groups = w.k / w.group, pairs = w.group / 8;
    const uint8_t* wt = w.data.get() + tile * kTile * w.k / 2;
    const float* wscale = w.scale.get() + tile * groups * kTile;
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256 out[R][kBlocks];
    zeroed(out);
    for (std::size_t g = 0; g < groups; ++g) {
        __m256i acc[R][kBlocks];
        zeroed(acc);
        const int8_t* x[R];
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) x[r] = a.q.data() + (row0 + r) * w.k + g * w.group;
        const uint8_t* wg = wt + g * pairs * kTile * 4;
        for (std::size_t run = 0; run < pairs; run += Dot::kRun) {
            __m256i part[R][kBlocks];
            zeroed(part);
            for (std::size_t p = run; p < std::min(run + Dot::kRun, pairs); ++p) {
                __m256i x0[R], x1[R];
                _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                    x0[r] = _mm256_set1_epi32(quad(x[r] + 8 * p));
                    x1[r] = _mm256_set1_epi32(quad(x[r] + 8 * p + 4));
                }
                _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(wg + p * 128 + 32 * j));
                    const __m256i lo = _mm256_and_si256(v, nibble);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                        Dot::add(part[r][j], lo, hi, x0[r], x1[r]);
                    }
                }
            }
            _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) Dot::widen(acc[r][j], part[r][j]);
            }
        }
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            const std::size_t i = (row0 + r) * groups + g;
            const __m256i offset = _mm256_set1_epi32(8 * a.sum[i]);
            const __m256 scale = _mm256_set1_ps(a.scale[i]);
            _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                const __m256 channel_scale = _mm256_loadu_ps(wscale + g * kTile + 8 * j);
                out[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(acc[r][j], offset)),
                                            _mm256_mul_ps(channel_scale, scale), out[r][j]);
            }
        }
    }
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
        _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
            _mm256_storeu_ps(y + (row0 + r) * w.n + tile * kTile + 8 * j, out[r][j]);
        }
    }
}

}  // namespace matmul::avx256
