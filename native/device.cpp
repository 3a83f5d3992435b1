#include "device.hpp"

#include <algorithm>
#include <stdexcept>

std::string resolve_device(const ov::Core& core, const std::string& requested) {
    if (requested == "CPU" || requested == "GPU") {
        return requested;
    }
    if (requested != "AUTO") {
        throw std::invalid_argument("device must be AUTO, CPU or GPU, got '" + requested + "'");
    }
    const auto devices = core.get_available_devices();
    const bool has_gpu = std::any_of(devices.begin(), devices.end(),
                                     [](const std::string& name) { return name.rfind("GPU", 0) == 0; });
    return has_gpu ? "GPU" : "CPU";
}

ov::element::Type parse_kv_precision(const std::string& name) {
    if (name == "u8") return ov::element::u8;
    if (name == "f16") return ov::element::f16;
    if (name == "bf16") return ov::element::bf16;
    if (name == "f32") return ov::element::f32;
    throw std::invalid_argument("kv_precision must be u8, f16, bf16 or f32, got '" + name + "'");
}

std::optional<ov::element::Type> parse_inference_precision(const std::string& name) {
    if (name.empty()) return std::nullopt;
    if (name == "f32") return ov::element::f32;
    if (name == "bf16") return ov::element::bf16;
    if (name == "f16") return ov::element::f16;
    throw std::invalid_argument("inference_precision must be empty, f32, bf16 or f16, got '" + name + "'");
}
