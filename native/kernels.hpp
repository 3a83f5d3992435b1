#pragma once
// Which kernel the plugin runs each op of a compiled model with, read from its runtime (executed) graph. For
// reports, not for serving: whether a limit such as ONEDNN_MAX_CPU_ISA=AVX2 reaches a kernel is only visible here
// (some kernels dispatch on the CPU's ISA by themselves), so every speed figure can name the ISA it really ran on.
#include <string>
#include <vector>

#include <openvino/runtime/compiled_model.hpp>

struct KernelInfo {
    std::string layer_type;  // the plugin's node type, e.g. "FullyConnected", "PagedAttention"
    std::string primitive;   // its implementation, e.g. "brgemm_avx512_amx", "jit_avx2", "ref"
    std::string precision;   // the precision it ran at
};

std::vector<KernelInfo> executed_kernels(const ov::CompiledModel& compiled);

// How our own matrix kernel is listed (compressed_matmul.hpp): with quantised activations, or with f32 ones.
KernelInfo native_matmul_kernel(bool exact_activations);
