#pragma once
// Turning the runner's device and precision strings into what ov::Core::compile_model wants.
#include <optional>
#include <string>

#include <openvino/core/type/element_type.hpp>
#include <openvino/runtime/core.hpp>

// "AUTO" resolves to GPU when the core sees one, else CPU. The AUTO plugin itself is not used: it may start on
// one device and move to another, while the paged cache tensors are allocated for one device at load.
std::string resolve_device(const ov::Core& core, const std::string& requested);

// "u8" | "f16" | "bf16" | "f32"; throws std::invalid_argument otherwise.
ov::element::Type parse_kv_precision(const std::string& name);

// "" (the plugin's default, returned as nullopt) | "f32" | "bf16" | "f16"; throws std::invalid_argument otherwise.
std::optional<ov::element::Type> parse_inference_precision(const std::string& name);
