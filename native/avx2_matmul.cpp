// The compressed-weight kernel for AVX2 CPUs without AVX-512 VNNI: what most household boxes are (N100 class, older
// NUCs, AMD before Zen 4). The same packed weights, the same quantised activations and the same integer dot
// products per group as the VNNI build (vnni_matmul.cpp), turned into floats in the same order: the same bits.
//
// AVX2 has no `vpdpbusd`. `vpmaddubsw` multiplies unsigned by signed bytes and adds pairs into 16 bits, saturating;
// u8 weights (0..255) times int8 activations would overflow, so the weights are taken as q - 128 (one xor), their
// magnitude (<= 128) goes in as the unsigned byte and their sign moves onto the activation (|x| <= 127, never -128):
// a pair is at most 2 * 128 * 127 = 32512. `vpmaddwd` by ones then sums the pairs into the quadruple's int32, and
// (128 - zero) * sum(x) restores the zero point. INT4 weights (0..15, stored +8) fit `vpmaddubsw` as they are,
// and their 16-bit pairs are summed over four input steps before they are widened (NibbleDots).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "avx2_tiles.hpp"

namespace matmul::avx2 {
namespace {

using avx256::kBlocks;
using avx256::store_scaled;
using avx256::zeroed;

constexpr std::size_t kMaxRows = 2;  // rows per pass: 4 accumulators each, of 16 registers
constexpr std::size_t kExactRows = 3;

CHORUS_AVX2 inline float max_of(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

CHORUS_AVX2 inline int32_t sum_of(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

// INT8 weights as q - 128 (one xor), their magnitude as the unsigned byte and their sign on the activation: see the
// top of the file. (128 - zero) * sum(x) then restores the zero point, the integer the VNNI builds get as
// acc - zero * sum(x).
struct ByteDots {
    struct Weights {
        __m256i magnitude, centred;
    };
    CHORUS_AVX2 static inline __attribute__((always_inline)) Weights weights(__m256i q) {
        const __m256i centred = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));  // q - 128 as int8
        return {_mm256_abs_epi8(centred), centred};
    }
    CHORUS_AVX2 static inline __attribute__((always_inline)) void add(__m256i& acc, const Weights& w, __m256i x) {
        const __m256i pairs = _mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(x, w.centred));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
    }
    CHORUS_AVX2 static inline __attribute__((always_inline)) __m256i zero_factor(__m256i zero) {
        return _mm256_sub_epi32(_mm256_set1_epi32(128), zero);
    }
};

// INT4 weights (0..15) fit `vpmaddubsw` as they are, and so small that its 16-bit pairs can be summed before they
// are widened: a pair is at most 2 * 15 * 127 = 3810, an input step's low and high nibbles give two, so the 16-bit
// sums of four steps stay within 4 * 7620 = 30480 < 32767. Then one `vpmaddwd` by ones widens four steps' sums into
// the quadruples' int32, where widening each step took two: the same integers, half the multiplies.
struct NibbleDots {
    static constexpr std::size_t kRun = 4;
    CHORUS_AVX2 static inline __attribute__((always_inline)) void add(__m256i& part, __m256i low, __m256i high,
                                                                      __m256i x0, __m256i x1) {
        part = _mm256_add_epi16(part, _mm256_add_epi16(_mm256_maddubs_epi16(low, x0), _mm256_maddubs_epi16(high, x1)));
    }
    CHORUS_AVX2 static inline __attribute__((always_inline)) void widen(__m256i& acc, __m256i part) {
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(part, _mm256_set1_epi16(1)));
    }
};

template <std::size_t R>
void tile_rows(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    if (w.kind == PackedWeights::Kind::int8_asym) {
        avx256::int8_tile<ByteDots, R>(w, a, row0, tile, y);
    } else {
        avx256::int4_tile<NibbleDots, R>(w, a, row0, tile, y);
    }
}

// One tile of 32 output channels for R rows of f32 activations: each weight decompressed ((q - zero) as an integer,
// then f32) once for the R rows. Sums run over the inputs in order, per row, as in the VNNI build.
template <std::size_t R>
CHORUS_AVX2 void exact_tile(const PackedWeights& w, const float* x, std::size_t row0, std::size_t tile, float* y) {
    const uint8_t* wt = w.data.get() + tile * kTile * w.k;
    const int32_t* zero = w.zero.get() + tile * kTile;
    const __m256i byte = _mm256_set1_epi32(0xFF);
    __m256 acc[R][kBlocks];
    zeroed(acc);
    for (std::size_t s = 0; s < w.k / 4; ++s) {
        _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
            const __m256i quads = _mm256_load_si256(reinterpret_cast<const __m256i*>(wt + s * 128 + 32 * j));
            const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero + 8 * j));
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; ++i) {
                const __m256i codes = _mm256_and_si256(_mm256_srli_epi32(quads, 8 * i), byte);
                const __m256 weight = _mm256_cvtepi32_ps(_mm256_sub_epi32(codes, z));
                _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                    const __m256 xr = _mm256_set1_ps(x[(row0 + r) * w.k + 4 * s + i]);
                    acc[r][j] = _mm256_fmadd_ps(weight, xr, acc[r][j]);
                }
            }
        }
    }
    store_scaled<R>(w, row0, tile, acc, y);
}

}  // namespace

CHORUS_AVX2 void quantise_row(const float* x, std::size_t k, std::size_t group, int8_t* q, float* scale,
                              int32_t* sum) {
    // group is a multiple of 8 (check_shape): whole vectors only.
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (std::size_t g = 0; g < k / group; ++g) {
        const float* xg = x + g * group;
        __m256 amax = _mm256_setzero_ps();
        for (std::size_t i = 0; i < group; i += 8) {
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(xg + i)));  // |x|
        }
        const float m = max_of(amax);
        // All-zero groups quantise to zeros with any scale; 1 keeps the products finite.
        const float s = m > 0.0f ? m / 127.0f : 1.0f;
        const __m256 inv = _mm256_set1_ps(1.0f / s);
        __m256i total = _mm256_setzero_si256();
        for (std::size_t i = 0; i < group; i += 8) {
            const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xg + i), inv));  // round to nearest
            total = _mm256_add_epi32(total, v);
            // 8 int32 (|v| <= 127) to 8 int8: the packs work per 128-bit lane, the permutation joins the lanes.
            const __m256i words = _mm256_packs_epi32(v, v);
            const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words, words), order);
            _mm_storel_epi64(reinterpret_cast<__m128i*>(q + g * group + i), _mm256_castsi256_si128(bytes));
        }
        scale[g] = s;
        sum[g] = sum_of(total);
    }
}

void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y) {
    std::size_t r = 0;
    for (; r + kMaxRows <= rows; r += kMaxRows) tile_rows<kMaxRows>(w, a, r, tile, y);
    if (r < rows) tile_rows<1>(w, a, r, tile, y);
}

void exact_tiles(const PackedWeights& w, const float* x, std::size_t rows, std::size_t tile, float* y) {
    std::size_t r = 0;
    for (; r + kExactRows <= rows; r += kExactRows) exact_tile<kExactRows>(w, x, r, tile, y);
    switch (rows - r) {
        case 2: exact_tile<2>(w, x, r, tile, y); break;
        case 1: exact_tile<1>(w, x, r, tile, y); break;
        default: break;
    }
}

}  // namespace matmul::avx2
