#pragma once
// What the builds of the compressed-weight kernel share (vnni_matmul.cpp: AVX-512 VNNI; avxvnni_matmul.cpp:
// AVX-VNNI; avx2_matmul.cpp: AVX2):
// the activations as quantised for one call, the 32-channel tiles the weights are packed in, and how the tiles are
// shared out among threads. Internal to those files and the dispatch in vnni_matmul.cpp.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "vnni_matmul.hpp"

namespace matmul {

constexpr std::size_t kTile = 32;  // output channels per tile: one run of the packed weights, [k/4][32][4] bytes

// Four int8 activations as the int32 a broadcast takes (memcpy: an int8 buffer is not read through int32*).
inline int32_t quad(const int8_t* x) {
    int32_t v;
    std::memcpy(&v, x, sizeof v);
    return v;
}

struct Quantised {  // one call's activations, int8 per row and group
    std::vector<int8_t> q;       // [rows][k], read four inputs (one input step) at a time
    std::vector<float> scale;    // [rows][groups]
    std::vector<int32_t> sum;    // [rows][groups]: sum of q over the group, for the zero point / +8 offset
};

// Runs of tiles, taken by whichever thread is free: a worker that wakes late costs the caller no wait, as it would
// with halves fixed in advance. A run is 1/16 of the tiles, long enough to stream from memory in order.
template <class TileFn>
void for_each_tile(std::size_t tiles, const TileFn& tile_fn) {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, tiles, std::max<std::size_t>(1, tiles / 16)),
        [&](const tbb::blocked_range<std::size_t>& range) {
            for (std::size_t tile = range.begin(); tile != range.end(); ++tile) tile_fn(tile);
        },
        tbb::simple_partitioner());
}

// Each ISA's kernels. All give the same bits for the same call: the same integer dot products per group, turned
// into floats and summed in the same order (tests/native/test_vnni_matmul.py holds them to it).
//   quantise_row: x [k] -> q [k], scale and sum [k / group]: round(x / s), s = max |x| / 127, per group.
//   tiles: one tile of 32 output channels for every row (y [rows][n]).
//   exact_tiles: the same for f32 activations and INT8 weights (exact_matmul).
namespace avx512 {
void quantise_row(const float* x, std::size_t k, std::size_t group, int8_t* q, float* scale, int32_t* sum);
void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y);
void exact_tiles(const PackedWeights& w, const float* x, std::size_t rows, std::size_t tile, float* y);
}  // namespace avx512
namespace avx2 {
void quantise_row(const float* x, std::size_t k, std::size_t group, int8_t* q, float* scale, int32_t* sum);
void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y);
void exact_tiles(const PackedWeights& w, const float* x, std::size_t rows, std::size_t tile, float* y);
}  // namespace avx2
namespace avxvnni {  // quantise_row and exact_tiles: avx2's
void tiles(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y);       // VEX
void tiles_evex(const PackedWeights& w, const Quantised& a, std::size_t rows, std::size_t tile, float* y);  // EVEX
}  // namespace avxvnni

}  // namespace matmul
