#pragma once
// What the two 256-bit builds of the compressed-weight kernel share (avx2_matmul.cpp: AVX2; avxvnni_matmul.cpp:
// AVX-VNNI): a tile of 32 output channels as four 8-channel accumulators per row. Internal to those files.
#include <immintrin.h>

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

// An INT4 tile's R rows of one group finished into `out`: the integer sums less the +8 every weight is stored
// with, times the channels' scales and the row's.
template <std::size_t R>
CHORUS_AVX2 inline __attribute__((always_inline)) void finish_int4_group(const Quantised& a, const float* wscale,
                                                                         std::size_t row0, std::size_t groups,
                                                                         std::size_t g,
                                                                         const __m256i (&acc)[R][kBlocks],
                                                                         __m256 (&out)[R][kBlocks]) {
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

// R rows' tile sums stored unscaled (INT4: the scales are in the sums already).
template <std::size_t R>
CHORUS_AVX2 inline __attribute__((always_inline)) void store(const PackedWeights& w, std::size_t row0,
                                                             std::size_t tile, const __m256 (&sums)[R][kBlocks],
                                                             float* y) {
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
        _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
            _mm256_storeu_ps(y + (row0 + r) * w.n + tile * kTile + 8 * j, sums[r][j]);
        }
    }
}

}  // namespace matmul::avx256
