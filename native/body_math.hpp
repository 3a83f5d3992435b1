#pragma once
// The vector loops of the native code predictor body (predictor_body.cpp), in AVX2 with FMA: every CPU that runs our
// matrix kernel has them (vnni_matmul.hpp's matmul_isa), and the body runs only where the kernel does. At 8 rows a
// frame's attention is ~20 M multiply-adds and its SiLU ~2 M exponentials: one at a time they cost the frame more
// than the plugin's vectorised SDPA and Swish (measured 1.2x a batch-8 frame), eight at a time ~1 ms.
#include <cstddef>

namespace body_math {
float dot(const float* a, const float* b, std::size_t n);
float sum_of_squares(const float* x, std::size_t n);
void add_scaled(float scale, const float* x, std::size_t n, float* y);             // y += scale * x
void silu_times(const float* gate, const float* up, std::size_t n, float* out);  // out = silu(gate) * up
}  // namespace body_math
