#pragma once
// Turning the runner's device and precision strings into what ov::Core::compile_model wants.
#include <optional>
#include <string>

#include <openvino/core/type/element_type.hpp>

// "CPU" | "GPU" | "GPU.N", returned as given; throws std::invalid_argument otherwise. The caller has picked the
// device (wyoming_chorus/engine/device.py resolves AUTO and checks that it is present): the paged cache is allocated on one.
std::string check_device_name(const std::string& name);

// "u8" | "f16" | "bf16" | "f32"; throws std::invalid_argument otherwise.
ov::element::Type parse_kv_precision(const std::string& name);

// "" (the plugin's default, returned as nullopt) | "f32" | "bf16" | "f16"; throws std::invalid_argument otherwise.
std::optional<ov::element::Type> parse_inference_precision(const std::string& name);

// The most telling ISA extension this CPU reports through CPUID and the OS has enabled: "amx_bf16", "avx512_bf16",
// "avx512f", "avx2", or "" (named as /proc/cpuinfo names them). CPUID rather than /proc/cpuinfo, because CPUID is what
// the plugin's kernels dispatch on: under an emulator (qemu-x86_64 -cpu Haswell-v4, .ci/avx2) /proc/cpuinfo still
// describes the host.
std::string cpu_isa();
