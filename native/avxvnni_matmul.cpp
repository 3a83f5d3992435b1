// The compressed-weight kernel for CPUs with AVX-VNNI but not AVX-512: the N100 class most households run (Alder
// Lake's and later E-cores, and their P-cores with AVX-512 off). The AVX2 build's tiles (avx2_matmul.cpp), with its
// four instructions per 32 products (`vpmaddubsw`, `vpmaddwd`, the sign trick, an add) replaced by one 256-bit
// `vpdpbusd`, which takes the u8 weights and int8 activations as they are, as the AVX-512 build does: the same
// integers, turned into floats in the same order, so the same bits as both. One row streams weights from memory
// either way; several rows (a batch of rooms) are where the products, not the memory, set the pace.
//
// Two encodings of the one source: VEX (`{vex} vpdpbusd`, CPUID AVX-VNNI) for those CPUs, and EVEX on 256-bit
// registers (AVX512-VL + VNNI) so that a CPU with AVX-512 but without AVX-VNNI (Zen 4, Ice Lake) runs and measures
// this very code: CHORUS_MATMUL_ISA=avxvnni (vnni_matmul.cpp picks the encoding the CPU has). The two instructions
// compute the same thing; qemu (11.1) does not implement the VEX one, so tests run the EVEX twin.
#include <immintrin.h>

#include "avx2_tiles.hpp"

namespace matmul::avxvnni {
namespace {

using avx256::kBlocks;
using avx256::store;
using avx256::store_scaled;
using avx256::zeroed;

constexpr std::size_t kMaxRows = 2;  // rows per pass: 4 accumulators each, 8 of 16 registers

enum class Encoding { vex, evex };

// acc += the dot products of w's u8 and x's s8 quadruples. Inline assembly: the VEX form needs a compiler target
// the module is not built for, and the pseudo-prefix fixes the encoding either way.
template <Encoding E>
CHORUS_AVX2 inline __attribute__((always_inline)) void dpbusd(__m256i& acc, __m256i w, __m256i x) {
    if constexpr (E == Encoding::vex) {
        __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(w), "x"(x));
    } else {
        __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(w), "x"(x));
    }
}

// One tile of 32 output channels for R rows of INT8 asymmetric weights: a 128-byte input step is four 32-byte
// loads (8 channels' 4 inputs each), each feeding R rows.
template <Encoding E, std::size_t R>
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
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(wg + s * 128 + 32 * j));
                _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) dpbusd<E>(acc[r][j], v, xs[r]);
            }
        }
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            const std::size_t i = (row0 + r) * groups + g;
            const __m256i sum = _mm256_set1_epi32(a.sum[i]);
            const __m256 scale = _mm256_set1_ps(a.scale[i]);
            _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                const __m256i z = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero + 8 * j));
                const __m256i dot = _mm256_sub_epi32(acc[r][j], _mm256_mullo_epi32(z, sum));
                out[r][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, out[r][j]);
            }
        }
    }
    store_scaled<R>(w, row0, tile, out, y);
}

// The same for INT4 symmetric weights, a scale per channel and group: a 128-byte step holds two input steps of 32
// channels (low nibbles, high nibbles).
template <Encoding E, std::size_t R>
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
        for (std::size_t p = 0; p < pairs; ++p) {
            __m256i x0[R], x1[R];
            _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                x0[r] = _mm256_set1_epi32(quad(x[r] + 8 * p));
                x1[r] = _mm256_set1_epi32(quad(x[r] + 8 * p + 4));
            }
            _Pragma("GCC unroll 4") for (std::size_t j = 0; j < kBlocks; ++j) {
                const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(wg + p * 128 + 32 * j));
                const __m256i lo = _mm256_and_si256(v, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
                _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                    dpbusd<E>(acc[r][j], lo, x0[r]);
                    dpbusd<E>(acc[r][j], hi, x1[r]);
                }
            }
        }
        avx256::finish_int4_group<R>(a, wscale, row0, groups, g, acc, out);
    }
    store<R>(w, row0, tile, out, y);
}

template <Encoding E, std::size_t R>
void tile_rows(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    if (w.kind == PackedWeights::Kind::int8_asym) {
        int8_tile<E, R>(w, a, row0, tile, y);
    } else {
        int4_tile<E, R>(w, a, row0, tile, y);
    }
}

template <Encoding E>
void tiles_of(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y) {
    std::size_t r = 0;
    for (; r + kMaxRows <= rows; r += kMaxRows) tile_rows<E, kMaxRows>(w, a, r, tile, y);
    if (r < rows) tile_rows<E, 1>(w, a, r, tile, y);
}

}  // namespace

void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y) {
    tiles_of<Encoding::vex>(w, a, rows, tile, y);
}

void tiles_evex(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y) {
    tiles_of<Encoding::evex>(w, a, rows, tile, y);
}

}  // namespace matmul::avxvnni
