#include "vnni_matmul.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "matmul_tiles.hpp"

// Only these functions use AVX-512: the module itself is built for the baseline x86-64, and they run only where
// matmul_isa() says the CPU has it.
#define CHORUS_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace matmul::avx512 {
namespace {

// acc += the dot products of w's u8 and x's s8 quadruples, in place. GCC's intrinsic for it copies the accumulator
// to a new register (and spills some) at every step of a loop holding several: the loop then waits on those moves.
CHORUS_VNNI inline void dpbusd(__m512i& acc, __m512i w, __m512i x) {
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
}

constexpr std::size_t kBlock = 16;   // output channels per 512-bit accumulator: two side by side in a tile
constexpr std::size_t kMaxRows = 4;  // rows sharing one pass over the weights (accumulators: 2-4 per row)

}  // namespace

CHORUS_VNNI void quantise_row(const float* x, std::size_t k, std::size_t group, int8_t* q, float* scale,
                              int32_t* sum) {
    for (std::size_t g = 0; g < k / group; ++g) {
        const float* xg = x + g * group;
        __m512 amax = _mm512_setzero_ps();
        std::size_t i = 0;
        for (; i + 16 <= group; i += 16) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(xg + i)));
        float m = _mm512_reduce_max_ps(amax);
        for (; i < group; ++i) m = std::max(m, std::fabs(xg[i]));
        // All-zero groups quantise to zeros with any scale; 1 keeps the products finite.
        const float s = m > 0.0f ? m / 127.0f : 1.0f;
        const __m512 inv = _mm512_set1_ps(1.0f / s);
        int32_t total = 0;
        i = 0;
        for (; i + 16 <= group; i += 16) {
            const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xg + i), inv));  // round to nearest
            _mm_storeu_si128(reinterpret_cast<__m128i*>(q + g * group + i), _mm512_cvtsepi32_epi8(v));
            total += _mm512_reduce_add_epi32(v);
        }
        for (; i < group; ++i) {
            const int32_t v = static_cast<int32_t>(std::nearbyint(xg[i] * (1.0f / s)));
            q[g * group + i] = static_cast<int8_t>(std::clamp(v, -127, 127));
            total += q[g * group + i];
        }
        scale[g] = s;
        sum[g] = total;
    }
}

namespace {

// The tile's 32 sums of R rows into y, times the output channels' scales (INT8: one per channel).
template <std::size_t R>
CHORUS_VNNI inline __attribute__((always_inline)) void store_scaled(const PackedWeights& w, std::size_t row0,
                                                                    std::size_t tile, const __m512 (&sum0)[R],
                                                                    const __m512 (&sum1)[R], float* y) {
    const __m512 scale0 = _mm512_loadu_ps(w.scale.get() + tile * kTile);
    const __m512 scale1 = _mm512_loadu_ps(w.scale.get() + tile * kTile + kBlock);
    _Pragma("GCC unroll 8") for (std::size_t r = 0; r < R; ++r) {
        float* yr = y + (row0 + r) * w.n + tile * kTile;
        _mm512_storeu_ps(yr, _mm512_mul_ps(sum0[r], scale0));
        _mm512_storeu_ps(yr + kBlock, _mm512_mul_ps(sum1[r], scale1));
    }
}

// One tile of 32 output channels for R rows of INT8 asymmetric weights. The tile's weights are one stream of
// 128-byte input steps (16 channels' 4 inputs, twice), so each thread reads one run of memory front to back; each
// load feeds R dot products and each activation broadcast two.
template <std::size_t R>
CHORUS_VNNI void int8_tile(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    const std::size_t groups = w.k / w.group, steps = w.group / 4;
    const uint8_t* wt = w.data.get() + tile * kTile * w.k;
    const __m512i zero0 = _mm512_loadu_si512(w.zero.get() + tile * kTile);
    const __m512i zero1 = _mm512_loadu_si512(w.zero.get() + tile * kTile + kBlock);
    __m512 out0[R], out1[R];
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) out0[r] = out1[r] = _mm512_setzero_ps();
    for (std::size_t g = 0; g < groups; ++g) {
        __m512i acc0[R], acc1[R];
        const int8_t* x[R];
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            x[r] = a.q.data() + (row0 + r) * w.k + g * w.group;
            acc0[r] = acc1[r] = _mm512_setzero_si512();
        }
        const uint8_t* wg = wt + g * steps * 2 * 64;
        for (std::size_t s = 0; s < steps; ++s) {
            const __m512i w0 = _mm512_load_si512(wg + s * 128), w1 = _mm512_load_si512(wg + s * 128 + 64);
            _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                const __m512i xr = _mm512_set1_epi32(quad(x[r] + 4 * s));
                dpbusd(acc0[r], w0, xr);
                dpbusd(acc1[r], w1, xr);
            }
        }
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            const std::size_t i = (row0 + r) * groups + g;
            const __m512i sum = _mm512_set1_epi32(a.sum[i]);
            const __m512 scale = _mm512_set1_ps(a.scale[i]);
            const __m512i dot0 = _mm512_sub_epi32(acc0[r], _mm512_mullo_epi32(zero0, sum));
            const __m512i dot1 = _mm512_sub_epi32(acc1[r], _mm512_mullo_epi32(zero1, sum));
            out0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0), scale, out0[r]);
            out1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1), scale, out1[r]);
        }
    }
    store_scaled<R>(w, row0, tile, out0, out1, y);
}

// The same for INT4 symmetric weights, a scale per channel and group: one 64-byte load holds two input steps of 16
// channels (low nibbles, high nibbles), so a 128-byte step of the stream feeds four dot products per row.
template <std::size_t R>
CHORUS_VNNI void int4_tile(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    const std::size_t groups = w.k / w.group, pairs = w.group / 8;
    const uint8_t* wt = w.data.get() + tile * kTile * w.k / 2;
    const float* wscale = w.scale.get() + tile * groups * kTile;
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    __m512 out0[R], out1[R];
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) out0[r] = out1[r] = _mm512_setzero_ps();
    for (std::size_t g = 0; g < groups; ++g) {
        __m512i acc0[R], acc1[R];
        const int8_t* x[R];
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            x[r] = a.q.data() + (row0 + r) * w.k + g * w.group;
            acc0[r] = acc1[r] = _mm512_setzero_si512();
        }
        const uint8_t* wg = wt + g * pairs * 2 * 64;
        for (std::size_t p = 0; p < pairs; ++p) {
            const __m512i v0 = _mm512_load_si512(wg + p * 128), v1 = _mm512_load_si512(wg + p * 128 + 64);
            const __m512i lo0 = _mm512_and_si512(v0, nibble), hi0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), nibble);
            const __m512i lo1 = _mm512_and_si512(v1, nibble), hi1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), nibble);
            _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
                const __m512i x0 = _mm512_set1_epi32(quad(x[r] + 8 * p));
                const __m512i x1 = _mm512_set1_epi32(quad(x[r] + 8 * p + 4));
                dpbusd(acc0[r], lo0, x0);
                dpbusd(acc1[r], lo1, x0);
                dpbusd(acc0[r], hi0, x1);
                dpbusd(acc1[r], hi1, x1);
            }
        }
        const __m512 scale0 = _mm512_loadu_ps(wscale + g * kTile);
        const __m512 scale1 = _mm512_loadu_ps(wscale + g * kTile + kBlock);
        _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
            const std::size_t i = (row0 + r) * groups + g;
            const __m512i offset = _mm512_set1_epi32(8 * a.sum[i]);  // the weights are stored +8
            const __m512 scale = _mm512_set1_ps(a.scale[i]);
            out0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc0[r], offset)),
                                      _mm512_mul_ps(scale0, scale), out0[r]);
            out1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc1[r], offset)),
                                      _mm512_mul_ps(scale1, scale), out1[r]);
        }
    }
    _Pragma("GCC unroll 4") for (std::size_t r = 0; r < R; ++r) {
        float* yr = y + (row0 + r) * w.n + tile * kTile;
        _mm512_storeu_ps(yr, out0[r]);
        _mm512_storeu_ps(yr + kBlock, out1[r]);
    }
}

template <std::size_t R>
void tile_rows(const PackedWeights& w, const Quantised& a, std::size_t row0, std::size_t tile, float* y) {
    if (w.kind == PackedWeights::Kind::int8_asym) {
        int8_tile<R>(w, a, row0, tile, y);
    } else {
        int4_tile<R>(w, a, row0, tile, y);
    }
}

}  // namespace

// One tile for every row, kMaxRows at a time (the tile's weights come from the caches after the first pass).
void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y) {
    std::size_t r = 0;
    for (; r + kMaxRows <= rows; r += kMaxRows) tile_rows<kMaxRows>(w, a, r, tile, y);
    switch (rows - r) {
        case 3: tile_rows<3>(w, a, r, tile, y); break;
        case 2: tile_rows<2>(w, a, r, tile, y); break;
        case 1: tile_rows<1>(w, a, r, tile, y); break;
        default: break;
    }
}

namespace {

// Input `I` (0..3) of the 16 channels in a 64-byte VNNI load, minus their zero points, as f32.
template <int I>
CHORUS_VNNI __m512 decompressed(__m512i quads, __m512i zero) {
    const __m512i codes = _mm512_and_si512(_mm512_srli_epi32(quads, 8 * I), _mm512_set1_epi32(0xFF));
    return _mm512_cvtepi32_ps(_mm512_sub_epi32(codes, zero));
}

// Input `I` of one 128-byte step for R rows: both blocks' weights decompressed once, then one FMA each per row.
template <int I, std::size_t R>
CHORUS_VNNI inline __attribute__((always_inline)) void exact_input(const float* const (&x)[R], __m512i v0, __m512i v1,
                                                                   __m512i zero0, __m512i zero1, __m512 (&acc0)[R],
                                                                   __m512 (&acc1)[R]) {
    const __m512 f0 = decompressed<I>(v0, zero0), f1 = decompressed<I>(v1, zero1);
    _Pragma("GCC unroll 8") for (std::size_t r = 0; r < R; ++r) {
        const __m512 xr = _mm512_set1_ps(x[r][I]);
        acc0[r] = _mm512_fmadd_ps(f0, xr, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(f1, xr, acc1[r]);
    }
}

// One tile of 32 output channels for R rows of f32 activations: the INT8 stream of int8_tile, each weight
// decompressed once for the R rows. Sums run over the inputs in order, per row.
template <std::size_t R>
CHORUS_VNNI void exact_tile(const PackedWeights& w, const float* x, std::size_t row0, std::size_t tile, float* y) {
    const uint8_t* wt = w.data.get() + tile * kTile * w.k;
    const __m512i zero0 = _mm512_loadu_si512(w.zero.get() + tile * kTile);
    const __m512i zero1 = _mm512_loadu_si512(w.zero.get() + tile * kTile + kBlock);
    __m512 acc0[R], acc1[R];
    _Pragma("GCC unroll 8") for (std::size_t r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (std::size_t s = 0; s < w.k / 4; ++s) {
        const __m512i v0 = _mm512_load_si512(wt + s * 128), v1 = _mm512_load_si512(wt + s * 128 + 64);
        const float* xs[R];
        _Pragma("GCC unroll 8") for (std::size_t r = 0; r < R; ++r) xs[r] = x + (row0 + r) * w.k + 4 * s;
        exact_input<0, R>(xs, v0, v1, zero0, zero1, acc0, acc1);
        exact_input<1, R>(xs, v0, v1, zero0, zero1, acc0, acc1);
        exact_input<2, R>(xs, v0, v1, zero0, zero1, acc0, acc1);
        exact_input<3, R>(xs, v0, v1, zero0, zero1, acc0, acc1);
    }
    store_scaled<R>(w, row0, tile, acc0, acc1, y);
}

// Rows per pass of exact_tile: a weight decompressed (4 operations per 16) serves this many FMAs; 16 accumulators.
constexpr std::size_t kExactRows = 8;

}  // namespace

void exact_tiles(const PackedWeights& w, const float* x, std::size_t rows, std::size_t tile, float* y) {
    std::size_t r = 0;
    for (; r + kExactRows <= rows; r += kExactRows) exact_tile<kExactRows>(w, x, r, tile, y);
    switch (rows - r) {
        case 7: exact_tile<7>(w, x, r, tile, y); break;
        case 6: exact_tile<6>(w, x, r, tile, y); break;
        case 5: exact_tile<5>(w, x, r, tile, y); break;
        case 4: exact_tile<4>(w, x, r, tile, y); break;
        case 3: exact_tile<3>(w, x, r, tile, y); break;
        case 2: exact_tile<2>(w, x, r, tile, y); break;
        case 1: exact_tile<1>(w, x, r, tile, y); break;
        default: break;
    }
}

}  // namespace matmul::avx512

namespace {

using matmul::kTile;

std::unique_ptr<uint8_t[], void (*)(void*)> aligned_bytes(std::size_t size) {
    void* p = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (p == nullptr) throw std::bad_alloc();
    return {static_cast<uint8_t*>(p), std::free};
}

void check_shape(std::size_t n, std::size_t k, std::size_t group) {
    if (n == 0 || n % kTile != 0 || group == 0 || group % 8 != 0 || k == 0 || k % group != 0) {
        throw std::invalid_argument("vnni_matmul takes n a multiple of 32, a group a multiple of 8 and k a multiple "
                                    "of the group, got n=" +
                                    std::to_string(n) + " k=" + std::to_string(k) + " group=" + std::to_string(group));
    }
}

}  // namespace

std::size_t PackedWeights::bytes() const {
    return kind == Kind::int8_asym ? n * k : n * k / 2;
}

namespace {
// AVX-VNNI's 256-bit `vpdpbusd` in the encoding this CPU has: VEX (CPUID AVX-VNNI), else EVEX (AVX512-VL + VNNI),
// else none (avxvnni_matmul.cpp says why there are two).
enum class Vnni256 { none, vex, evex };
Vnni256 vnni256() {
    static const Vnni256 encoding = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avxvnni")) return Vnni256::vex;
        if (__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) return Vnni256::evex;
        return Vnni256::none;
    }();
    return encoding;
}
}  // namespace

MatmulIsa matmul_isa() {
    static const MatmulIsa isa = [] {
        __builtin_cpu_init();
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vnni");
        const bool avx_vnni = avx2 && vnni256() != Vnni256::none;
        // For measuring an older CPU's build on a newer one (docs/performance.md); never needed to serve.
        const char* cap = std::getenv("CHORUS_MATMUL_ISA");
        const std::string asked = cap == nullptr ? "" : cap;
        if (asked == "avx2" && avx2) return MatmulIsa::avx2;
        if (asked == "avxvnni" && avx_vnni) return MatmulIsa::avx_vnni;
        if (avx512) return MatmulIsa::avx512_vnni;
        // Only the VEX form counts unasked: where just the EVEX one is, the AVX-512 build is there too.
        if (avx2 && vnni256() == Vnni256::vex) return MatmulIsa::avx_vnni;
        return avx2 ? MatmulIsa::avx2 : MatmulIsa::none;
    }();
    return isa;
}

const char* matmul_isa_name() {
    switch (matmul_isa()) {
        case MatmulIsa::avx512_vnni: return "avx512";
        case MatmulIsa::avx_vnni: return "avxvnni";
        case MatmulIsa::avx2: return "avx2";
        default: return "";
    }
}

bool native_matmul_available() { return matmul_isa() != MatmulIsa::none; }

PackedWeights pack_int8_asym(const uint8_t* q, const float* scale, const float* zero, std::size_t n, std::size_t k,
                             std::size_t group) {
    check_shape(n, k, group);
    PackedWeights w;
    w.kind = PackedWeights::Kind::int8_asym;
    w.n = n, w.k = k, w.group = group;
    w.data = aligned_bytes(n * k);
    w.scale = std::make_unique<float[]>(n);
    w.zero = std::make_unique<int32_t[]>(n);
    for (std::size_t c = 0; c < n; ++c) {
        w.scale[c] = scale[c];
        const float z = std::nearbyint(zero[c]);
        if (z != zero[c] || z < 0.0f || z > 255.0f) {
            throw std::invalid_argument("INT8 zero point " + std::to_string(zero[c]) + " is not an integer in 0..255");
        }
        w.zero[c] = static_cast<int32_t>(z);
    }
    uint8_t* out = w.data.get();
    for (std::size_t tile = 0; tile < n / kTile; ++tile) {
        for (std::size_t step = 0; step < k / 4; ++step) {
            for (std::size_t c = 0; c < kTile; ++c) {
                std::memcpy(out, q + (tile * kTile + c) * k + step * 4, 4);
                out += 4;
            }
        }
    }
    return w;
}

PackedWeights pack_int4_sym(const int8_t* q, const float* scale, std::size_t n, std::size_t k, std::size_t group) {
    check_shape(n, k, group);
    const std::size_t groups = k / group;
    PackedWeights w;
    w.kind = PackedWeights::Kind::int4_sym;
    w.n = n, w.k = k, w.group = group;
    w.data = aligned_bytes(n * k / 2);
    w.scale = std::make_unique<float[]>(n * groups);
    for (std::size_t tile = 0; tile < n / kTile; ++tile) {
        for (std::size_t g = 0; g < groups; ++g) {
            for (std::size_t c = 0; c < kTile; ++c) {
                w.scale[(tile * groups + g) * kTile + c] = scale[(tile * kTile + c) * groups + g];
            }
        }
    }
    uint8_t* out = w.data.get();
    auto value = [&](std::size_t channel, std::size_t input) {
        const int v = q[channel * k + input];
        if (v < -8 || v > 7) throw std::invalid_argument("INT4 value " + std::to_string(v) + " outside -8..7");
        return static_cast<uint8_t>(v + 8);
    };
    for (std::size_t tile = 0; tile < n / kTile; ++tile) {
        for (std::size_t pair = 0; pair < k / 8; ++pair) {  // input steps 2*pair (low nibbles) and 2*pair+1 (high)
            for (std::size_t c = 0; c < kTile; ++c) {
                for (std::size_t j = 0; j < 4; ++j) {
                    const std::size_t channel = tile * kTile + c;
                    const uint8_t low = value(channel, pair * 8 + j), high = value(channel, pair * 8 + 4 + j);
                    *out++ = static_cast<uint8_t>(low | (high << 4));
                }
            }
        }
    }
    return w;
}

void vnni_matmul(const PackedWeights& w, const float* x, std::size_t rows, float* y) {
    if (rows == 0) return;
    if (matmul_isa() == MatmulIsa::none) throw std::runtime_error("this CPU has neither AVX2 nor AVX-512 VNNI");
    const std::size_t groups = w.k / w.group;
    // The caller's buffer, named through a reference: a lambda does not capture a thread_local, so the TBB workers
    // would otherwise each see their own (empty) one.
    thread_local matmul::Quantised buffer;
    matmul::Quantised& a = buffer;
    a.q.resize(rows * w.k);
    a.scale.resize(rows * groups);
    a.sum.resize(rows * groups);
    const MatmulIsa isa = matmul_isa();
    const bool avx512 = isa == MatmulIsa::avx512_vnni;
    // The AVX-VNNI build quantises as the AVX2 one does (the same 256-bit code).
    auto* quantise_row = avx512 ? matmul::avx512::quantise_row : matmul::avx2::quantise_row;
    auto* tiles = avx512                    ? matmul::avx512::tiles
                  : isa == MatmulIsa::avx2 ? matmul::avx2::tiles
                  : vnni256() == Vnni256::vex ? matmul::avxvnni::tiles
                                              : matmul::avxvnni::tiles_evex;
    for (std::size_t r = 0; r < rows; ++r) {
        quantise_row(x + r * w.k, w.k, w.group, a.q.data() + r * w.k, a.scale.data() + r * groups,
                     a.sum.data() + r * groups);
    }
    matmul::for_each_tile(w.n / kTile, [&](std::size_t tile) { tiles(w, a, rows, tile, y); });
}

void exact_matmul(const PackedWeights& w, const float* x, std::size_t rows, float* y) {
    if (w.kind != PackedWeights::Kind::int8_asym) {
        throw std::invalid_argument("exact_matmul takes INT8 asymmetric weights");
    }
    if (rows == 0) return;
    if (matmul_isa() == MatmulIsa::none) throw std::runtime_error("this CPU has neither AVX2 nor AVX-512 VNNI");
    // f32 activations take FMAs, not dot products: the AVX-VNNI build has nothing of its own to add here.
    auto* exact_tiles =
        matmul_isa() == MatmulIsa::avx512_vnni ? matmul::avx512::exact_tiles : matmul::avx2::exact_tiles;
    matmul::for_each_tile(w.n / kTile, [&](std::size_t tile) { exact_tiles(w, x, rows, tile, y); });
}
