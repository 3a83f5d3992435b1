#include "kernels.hpp"

namespace {

std::string info(const ov::Node::RTMap& rt_info, const std::string& key) {
    const auto found = rt_info.find(key);
    return found == rt_info.end() ? std::string() : found->second.as<std::string>();
}

}  // namespace

std::vector<KernelInfo> executed_kernels(const ov::CompiledModel& compiled) {
    std::vector<KernelInfo> kernels;
    for (const auto& op : compiled.get_runtime_model()->get_ordered_ops()) {
        const auto& rt_info = op->get_rt_info();
        // The keys of ov::exec_model_info (its header is not in the openvino wheel).
        kernels.push_back({info(rt_info, "layerType"), info(rt_info, "primitiveType"),
                           info(rt_info, "runtimePrecision")});
    }
    return kernels;
}
