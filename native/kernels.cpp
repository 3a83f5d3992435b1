#include "kernels.hpp"

#include "compressed_matmul.hpp"

namespace {

std::string info(const ov::Node::RTMap& rt_info, const std::string& key) {
    const auto found = rt_info.find(key);
    return found == rt_info.end() ? std::string() : found->second.as<std::string>();
}

}  // namespace

std::vector<KernelInfo> executed_kernels(const ov::CompiledModel& compiled) {
    std::vector<KernelInfo> kernels;
    const std::string suffix = kNativeMatMulSuffix;
    for (const auto& op : compiled.get_runtime_model()->get_ordered_ops()) {
        const auto& rt_info = op->get_rt_info();
        const std::string& name = op->get_friendly_name();
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            kernels.push_back({"CompressedMatMul", "chorus_vnni_avx512", "u8_i8"});  // ours: vnni_matmul.hpp
            continue;
        }
        // The keys of ov::exec_model_info (its header is not in the openvino wheel).
        kernels.push_back({info(rt_info, "layerType"), info(rt_info, "primitiveType"),
                           info(rt_info, "runtimePrecision")});
    }
    return kernels;
}
