#pragma once
// The language models' compressed-weight matrix products, run by our kernel (vnni_matmul.hpp) instead of the
// plugin's FullyConnected. At load, every MatMul(x, decompress(Constant)ᵀ) whose weights are INT8 asymmetric per
// channel or INT4 symmetric in groups (what export/compress.py writes) becomes a CompressedMatMul holding the
// weights repacked; the CPU plugin runs an op it does not know through its evaluate() (a "Reference" node), on the
// infer's own threads. Anything else stays as it was. With `exact_activations` (the code predictor's heads, whose
// logits pick the codes) only INT8 products are taken, and their activations stay f32 (exact_matmul).
#include <cstddef>
#include <memory>

#include <openvino/core/model.hpp>
#include <openvino/op/op.hpp>

#include "vnni_matmul.hpp"

class CompressedMatMul : public ov::op::Op {
public:
    OPENVINO_OP("CompressedMatMul", "chorus");

    CompressedMatMul() = default;
    CompressedMatMul(const ov::Output<ov::Node>& x, std::shared_ptr<const PackedWeights> weights,
                     bool exact_activations = false);

    void validate_and_infer_types() override;
    std::shared_ptr<ov::Node> clone_with_new_inputs(const ov::OutputVector& inputs) const override;
    bool visit_attributes(ov::AttributeVisitor& visitor) override;
    bool has_evaluate() const override;
    bool evaluate(ov::TensorVector& outputs, const ov::TensorVector& inputs) const override;

    const std::shared_ptr<const PackedWeights>& weights() const { return weights_; }

private:
    std::shared_ptr<const PackedWeights> weights_;
    bool exact_activations_ = false;
};

// Ends the friendly name of each CompressedMatMul: the plugin lists it as a "Reference" node, and executed_kernels
// (kernels.hpp) names it by this instead.
inline constexpr const char* kNativeMatMulSuffix = ":chorus_vnni";
inline constexpr const char* kExactMatMulSuffix = ":chorus_f32";

struct NativeMatMuls {
    std::size_t replaced = 0;  // MatMuls now run by the kernel
    std::size_t bytes = 0;     // their weights, as stored

    NativeMatMuls& operator+=(const NativeMatMuls& other) {
        replaced += other.replaced;
        bytes += other.bytes;
        return *this;
    }
};

// Rewrites `model` in place; call only where native_matmul_available() (AVX-512 VNNI, AVX-VNNI or AVX2) and the model computes
// in f32.
NativeMatMuls use_native_matmuls(const std::shared_ptr<ov::Model>& model, bool exact_activations = false);
