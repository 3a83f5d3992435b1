#include "compressed_matmul.hpp"

#include <optional>
#include <vector>

#include <openvino/core/graph_util.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/convert.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/multiply.hpp>
#include <openvino/op/reshape.hpp>
#include <openvino/op/subtract.hpp>

CompressedMatMul::CompressedMatMul(const ov::Output<ov::Node>& x, std::shared_ptr<const PackedWeights> weights,
                                   bool exact_activations)
    : ov::op::Op({x}), weights_(std::move(weights)), exact_activations_(exact_activations) {
    constructor_validate_and_infer_types();
}

void CompressedMatMul::validate_and_infer_types() {
    const auto& shape = get_input_partial_shape(0);
    NODE_VALIDATION_CHECK(this, get_input_element_type(0) == ov::element::f32, "computes in f32, got ",
                          get_input_element_type(0));
    NODE_VALIDATION_CHECK(this, shape.rank().is_static() && shape.size() >= 1 && shape[shape.size() - 1].is_static() &&
                                    static_cast<std::size_t>(shape[shape.size() - 1].get_length()) == weights_->k,
                          "takes rows of ", weights_->k, " inputs, got ", shape);
    ov::PartialShape out = shape;
    out[out.size() - 1] = static_cast<int64_t>(weights_->n);
    set_output_type(0, ov::element::f32, out);
}

std::shared_ptr<ov::Node> CompressedMatMul::clone_with_new_inputs(const ov::OutputVector& inputs) const {
    check_new_args_count(this, inputs);
    return std::make_shared<CompressedMatMul>(inputs.at(0), weights_, exact_activations_);
}

// The weights are no attribute: a CompressedMatMul exists only in memory, made at load from the exported IR.
bool CompressedMatMul::visit_attributes(ov::AttributeVisitor&) { return true; }

bool CompressedMatMul::has_evaluate() const { return true; }

bool CompressedMatMul::evaluate(ov::TensorVector& outputs, const ov::TensorVector& inputs) const {
    const ov::Tensor& x = inputs.at(0);
    ov::Shape shape = x.get_shape();
    const std::size_t rows = ov::shape_size(shape) / weights_->k;
    shape.back() = weights_->n;
    outputs.at(0).set_shape(shape);
    if (exact_activations_) {
        exact_matmul(*weights_, x.data<const float>(), rows, outputs.at(0).data<float>());
    } else {
        vnni_matmul(*weights_, x.data<const float>(), rows, outputs.at(0).data<float>());
    }
    return true;
}

namespace {

// A Constant, or a Convert of one (the values are read cast to the type asked for).
std::shared_ptr<ov::op::v0::Constant> constant_of(const ov::Output<ov::Node>& port) {
    auto node = port.get_node_shared_ptr();
    if (ov::as_type_ptr<ov::op::v0::Convert>(node)) node = node->get_input_node_shared_ptr(0);
    return ov::as_type_ptr<ov::op::v0::Constant>(node);
}

// The weights' side of Multiply(weights, scale) in either order: {weights, scale}.
std::optional<std::pair<ov::Output<ov::Node>, std::shared_ptr<ov::op::v0::Constant>>> split_scale(
    const std::shared_ptr<ov::Node>& multiply) {
    if (!ov::as_type_ptr<ov::op::v1::Multiply>(multiply)) return std::nullopt;
    // The scale is the float constant; the weights' side is a Subtract, or a Convert of integer codes.
    auto is_scale = [](const std::shared_ptr<ov::op::v0::Constant>& c) { return c && c->get_element_type().is_real(); };
    for (std::size_t i = 0; i < 2; ++i) {
        auto scale = constant_of(multiply->input_value(1 - i));
        if (is_scale(scale) && !is_scale(constant_of(multiply->input_value(i)))) {
            return std::make_pair(multiply->input_value(i), scale);
        }
    }
    return std::nullopt;
}

// Whether a constant holds one value for the whole tensor (a stacked head's scale and zero point: [1, 1]).
bool per_tensor(const std::shared_ptr<ov::op::v0::Constant>& constant) {
    return ov::shape_size(constant->get_shape()) == 1;
}

// A per-channel constant's n values, or a per-tensor one's value n times.
std::vector<float> channels_of(const std::shared_ptr<ov::op::v0::Constant>& constant, std::size_t n) {
    std::vector<float> values = constant->cast_vector<float>();
    return per_tensor(constant) ? std::vector<float>(n, values.at(0)) : values;
}

// Whether a scale or zero point constant runs along the weights' leading dimensions only (the output
// channels, then for INT4 the groups) with ones after: [n, 1] or [n, groups, 1], never along the inputs.
bool per_channel(const std::shared_ptr<ov::op::v0::Constant>& constant, const ov::Shape& leading) {
    const ov::Shape& shape = constant->get_shape();
    if (shape.size() < leading.size()) return false;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] != (d < leading.size() ? leading[d] : 1)) return false;
    }
    return true;
}

// Inputs per activation scale for INT8 weights (per output channel, so any length fits them): 128, or the longest
// power of two from 8 up that divides a shorter row. INT4 weights bring their own group.
std::size_t int8_activation_group(std::size_t k) {
    for (std::size_t group = 128; group >= 8; group /= 2) {
        if (k % group == 0) return group;
    }
    return 0;
}

// The MatMul's weights repacked, or nullptr when they are not one of the two layouts export/compress.py writes.
std::shared_ptr<const PackedWeights> pack(const std::shared_ptr<ov::op::v0::MatMul>& matmul) {
    const bool f32 = matmul->get_input_element_type(0) == ov::element::f32 &&
                     matmul->get_output_element_type(0) == ov::element::f32;
    if (matmul->get_transpose_a() || !matmul->get_transpose_b() || !f32) {
        return nullptr;
    }
    auto node = matmul->get_input_node_shared_ptr(1);
    if (ov::as_type_ptr<ov::op::v0::Convert>(node)) node = node->get_input_node_shared_ptr(0);
    const bool reshaped = ov::as_type_ptr<ov::op::v1::Reshape>(node) != nullptr;
    if (reshaped) node = node->get_input_node_shared_ptr(0);
    const auto scaled = split_scale(node);
    if (!scaled) return nullptr;
    const auto& [weights, scale] = *scaled;
    const auto subtract = ov::as_type_ptr<ov::op::v1::Subtract>(weights.get_node_shared_ptr());
    const auto q = subtract ? constant_of(subtract->input_value(0)) : constant_of(weights);
    if (!q) return nullptr;
    const ov::Shape& shape = q->get_shape();
    const auto& x_shape = matmul->get_input_partial_shape(0);
    if (x_shape.rank().is_dynamic() || x_shape[x_shape.size() - 1].is_dynamic()) return nullptr;
    const auto k = static_cast<std::size_t>(x_shape[x_shape.size() - 1].get_length());

    if (q->get_element_type() == ov::element::u8 && subtract && !reshaped && shape.size() == 2 && shape[1] == k) {
        const std::size_t n = shape[0];
        const auto zero = constant_of(subtract->input_value(1));
        auto along_channels = [n](const auto& c) { return per_channel(c, {n}) || per_tensor(c); };
        if (!zero || !along_channels(zero) || !along_channels(scale)) return nullptr;
        const std::size_t group = int8_activation_group(k);
        if (n % 32 != 0 || group == 0) return nullptr;
        return std::make_shared<PackedWeights>(pack_int8_asym(q->get_data_ptr<uint8_t>(), channels_of(scale, n).data(),
                                                              channels_of(zero, n).data(), n, k, group));
    }
    // INT4 in groups ([n, groups, group] reshaped to [n, k]), or per channel where a row is shorter than a group.
    if (q->get_element_type() == ov::element::i4 && !subtract &&
        ((reshaped && shape.size() == 3 && shape[1] * shape[2] == k) ||
         (!reshaped && shape.size() == 2 && shape[1] == k))) {
        const std::size_t n = shape[0], group = reshaped ? shape[2] : k;
        const std::size_t groups = k / group;
        const bool scaled_per_group = reshaped ? per_channel(scale, {n, groups}) : per_channel(scale, {n});
        if (!scaled_per_group || n % 32 != 0 || group % 8 != 0) return nullptr;
        return std::make_shared<PackedWeights>(pack_int4_sym(q->cast_vector<int8_t>().data(),
                                                             scale->cast_vector<float>().data(), n, k, group));
    }
    return nullptr;
}

}  // namespace

NativeMatMuls use_native_matmuls(const std::shared_ptr<ov::Model>& model, bool exact_activations) {
    NativeMatMuls result;
    for (const auto& node : model->get_ordered_ops()) {
        const auto matmul = ov::as_type_ptr<ov::op::v0::MatMul>(node);
        if (!matmul) continue;
        const auto weights = pack(matmul);
        if (!weights || (exact_activations && weights->kind != PackedWeights::Kind::int8_asym)) continue;
        auto replacement = std::make_shared<CompressedMatMul>(matmul->input_value(0), weights, exact_activations);
        replacement->set_friendly_name(matmul->get_friendly_name() +
                                       (exact_activations ? kExactMatMulSuffix : kNativeMatMulSuffix));
        ov::replace_node(matmul, replacement);
        ++result.replaced;
        result.bytes += weights->bytes();
    }
    if (result.replaced != 0) model->validate_nodes_and_infer_types();
    return result;
}
