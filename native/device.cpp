#include "device.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

std::string check_device_name(const std::string& name) {
    const bool gpu_n = name.size() > 4 && name.rfind("GPU.", 0) == 0 &&
                       std::all_of(name.begin() + 4, name.end(), [](unsigned char c) { return std::isdigit(c); });
    if (name == "CPU" || name == "GPU" || gpu_n) {
        return name;
    }
    throw std::invalid_argument("device must be CPU, GPU or GPU.N, got '" + name + "'");
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

std::string cpu_isa() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // Checked most telling first; libgcc also checks XCR0, so a state the OS has not enabled counts as absent.
    if (__builtin_cpu_supports("amx-bf16")) return "amx_bf16";
    if (__builtin_cpu_supports("avx512bf16")) return "avx512_bf16";
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
    return "";
}
