#include "kernels.hpp"

#include "compressed_matmul.hpp"

namespace {

std::string info(const ov::Node::RTMap& rt_info, const std::string& key) {
    const auto found = rt_info.find(key);
    return found == rt_info.end() ? std::string() : found->second.as<std::string>();
}

}  // namespace

KernelInfo native_matmul_kernel(bool exact_activations) {
    const MatmulIsa isa = matmul_isa();
    const bool avx512 = isa == MatmulIsa::avx512_vnni;
    if (exact_activations) return {"CompressedMatMul", avx512 ? "chorus_exact_avx512" : "chorus_exact_avx2", "u8_f32"};
    return {"CompressedMatMul",
            avx512 ? "chorus_vnni_avx512" : isa == MatmulIsa::avx_vnni ? "chorus_vnni_avxvnni" : "chorus_int8_avx2",
            "u8_i8"};
}

std::vector<KernelInfo> executed_kernels(const ov::CompiledModel& compiled) {
    std::vector<KernelInfo> kernels;
    auto ends_with = [](const std::string& name, const std::string& suffix) {
        return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    for (const auto& op : compiled.get_runtime_model()->get_ordered_ops()) {
        const auto& rt_info = op->get_rt_info();
        const std::string& name = op->get_friendly_name();
        if (ends_with(name, kNativeMatMulSuffix) || ends_with(name, kExactMatMulSuffix)) {  // ours
            kernels.push_back(native_matmul_kernel(ends_with(name, kExactMatMulSuffix)));
            continue;
        }
        // The keys of ov::exec_model_info (its header is not in the openvino wheel).
        kernels.push_back({info(rt_info, "layerType"), info(rt_info, "primitiveType"),
                           info(rt_info, "runtimePrecision")});
    }
    return kernels;
}
