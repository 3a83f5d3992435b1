#pragma once
// y = x · Wᵀ for compressed weights, with integer dot products (`vpdpbusd` of AVX-512 VNNI or AVX-VNNI, or AVX2's
// `vpmaddubsw`), for the few rows a step has. The plugin's compressed-weight FullyConnected streams the weights at ~23 GB/s on 2 Zen 4
// cores where a plain read runs at 27-29 and this kernel at 26-34 (docs/experiments.md): at one row a step is
// nothing but that stream.
//
// Numerics: each row's activations are quantised to int8 by itself, in groups of `group` inputs (one scale each),
// and every output channel is finished by one thread in one fixed order, so a row's result does not depend on the
// other rows in the call nor on the thread count: a batch speaks exactly as each request alone.
#include <cstddef>
#include <cstdint>
#include <memory>

struct PackedWeights {
    enum class Kind { int8_asym, int4_sym };

    Kind kind = Kind::int8_asym;
    std::size_t n = 0;      // output channels, a multiple of 32
    std::size_t k = 0;      // inputs, a multiple of `group`
    std::size_t group = 0;  // inputs per activation scale (and, for INT4, per weight scale); a multiple of 8
    // int8_asym: [n/32][k/4][32][4] u8, the VNNI layout: one 64-byte load is 4 inputs of 16 channels.
    // int4_sym: [n/32][k/8][32][4] bytes, values stored +8 (0..15): a byte's low nibble is input step 2i, its high
    //           nibble step 2i+1, so one load gives two VNNI vectors.
    std::unique_ptr<uint8_t[], void (*)(void*)> data{nullptr, nullptr};
    std::unique_ptr<float[]> scale;     // int8_asym: [n]; int4_sym: [n/32][k/group][32]
    std::unique_ptr<int32_t[]> zero;    // int8_asym: [n] (integer zero points); int4_sym: unused
    std::size_t bytes() const;          // of the weights as stored
};

// Which build of the kernel this CPU runs (by CPUID): AVX-512 VNNI (F, BW and VNNI: Ice Lake and later Xeons,
// Zen 4 and later), else AVX-VNNI (256-bit `vpdpbusd`: Alder Lake and later, the N100 class), else AVX2 with FMA
// (every household box since Haswell; `vpmaddubsw`, 32 products in 4 instructions where VNNI takes 1, ample for a
// stream of weights from memory, not for a batch), else none. All give the same bits. CHORUS_MATMUL_ISA=avx2 or
// =avxvnni in the environment picks that build on a newer CPU, to measure and test it there (AVX-VNNI through its
// EVEX twin where the CPU has AVX-512 VNNI only: avxvnni_matmul.cpp).
enum class MatmulIsa { none, avx2, avx_vnni, avx512_vnni };
MatmulIsa matmul_isa();
const char* matmul_isa_name();  // "avx512", "avxvnni", "avx2" or ""
// Whether this CPU runs the kernel at all (matmul_isa() is not none).
bool native_matmul_available();

// q: [n][k] u8 with dequantised w = (q - zero[n]) * scale[n]. Throws std::invalid_argument on shapes it cannot take.
PackedWeights pack_int8_asym(const uint8_t* q, const float* scale, const float* zero, std::size_t n, std::size_t k,
                             std::size_t group);
// q: [n][k] signed 4-bit values (-8..7) one per byte, w = q * scale[n][k / group].
PackedWeights pack_int4_sym(const int8_t* q, const float* scale, std::size_t n, std::size_t k, std::size_t group);

// x: [rows][k] f32, y: [rows][n] f32. Runs on the calling thread's TBB arena (the plugin's, inside an infer).
void vnni_matmul(const PackedWeights& w, const float* x, std::size_t rows, float* y);

// The same product for INT8 weights with the activations left in f32: each weight decompressed ((q - zero) as an
// integer, then f32) and multiplied in f32, the channel's scale applied to the sum. For products whose outputs pick
// tokens (the code predictor's heads): the plugin's decompressed weights give the same products, summed in another
// order. Throws std::invalid_argument for INT4 weights.
void exact_matmul(const PackedWeights& w, const float* x, std::size_t rows, float* y);
