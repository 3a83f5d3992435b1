// The compressed-weight kernel for CPUs with AVX-VNNI but not AVX-512: the N100 class most households run (Alder
// Lake's and later E-cores, and their P-cores with AVX-512 off). The AVX2 build's tiles (avx2_tiles.hpp), with its
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

// INT8 weights go in as they are (u8 by s8); acc - zero * sum(x) restores the zero point.
template <Encoding E>
struct ByteDots {
    CHORUS_AVX2 static inline __attribute__((always_inline)) __m256i weights(__m256i q) { return q; }
    CHORUS_AVX2 static inline __attribute__((always_inline)) void add(__m256i& acc, __m256i w, __m256i x) {
        dpbusd<E>(acc, w, x);
    }
    CHORUS_AVX2 static inline __attribute__((always_inline)) __m256i zero_factor(__m256i zero) {
        return _mm256_sub_epi32(_mm256_setzero_si256(), zero);
    }
};

// INT4 weights go in as they are; `vpdpbusd` sums into int32 directly, so a group is one run.
template <Encoding E>
struct NibbleDots {
    static constexpr std::size_t kRun = std::size_t{1} << 20;
    CHORUS_AVX2 static inline __attribute__((always_inline)) void add(__m256i& part, __m256i low, __m256i high,
                                                                      __m256i x0, __m256i x1) {
        dpbusd<E>(part, low, x0);
        dpbusd<E>(part, high, x1);
    }
    CHORUS_AVX2 static inline __attribute__((always_inline)) void widen(__m256i& acc, __m256i part) {
        acc = _mm256_add_epi32(acc, part);
    }
};

template <Encoding E, std::size_t R>
void tile_rows(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    if (w.kind == PackedWeights::Kind::int8_asym) {
        avx256::int8_tile<ByteDots<E>, R>(w, a, row0, tile, y);
    } else {
        avx256::int4_tile<NibbleDots<E>, R>(w, a, row0, tile, y);
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
