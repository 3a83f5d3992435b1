#include "predictor_heads.hpp"

#include <cstring>

#include <openvino/op/constant.hpp>
#include <openvino/op/convert.hpp>
#include <openvino/op/gather.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/multiply.hpp>
#include <openvino/op/parameter.hpp>
#include <openvino/op/result.hpp>
#include <openvino/op/subtract.hpp>

namespace {

using ov::Output;
using ov::Node;

// Head `index` of a constant stacked along axis 0 ([heads, ...] -> [...]); a constant broadcast over the heads
// ([1, ...] of the same rank) loses its leading axis; a scalar stays. nullptr for any other shape.
std::shared_ptr<Node> slice_constant(const std::shared_ptr<ov::op::v0::Constant>& constant, std::size_t heads,
                                     std::size_t index, std::size_t stacked_rank) {
    const ov::Shape& shape = constant->get_shape();
    if (shape.empty()) return constant;
    if (shape.size() != stacked_rank || (shape[0] != heads && shape[0] != 1)) return nullptr;
    const ov::Shape sliced(shape.begin() + 1, shape.end());
    const std::size_t bytes = constant->get_byte_size();
    if (shape[0] == 1) {
        return std::make_shared<ov::op::v0::Constant>(constant->get_element_type(), sliced, constant->get_data_ptr());
    }
    // Byte-exact for sub-byte types too, as long as one head is a whole number of bytes (u4: [vocab, H] always is).
    if (bytes % heads != 0) return nullptr;
    const auto* data = static_cast<const char*>(constant->get_data_ptr()) + index * (bytes / heads);
    return std::make_shared<ov::op::v0::Constant>(constant->get_element_type(), sliced, data);
}

// The stacked weights' producer chain with every constant sliced to one head, or an empty Output if the chain holds
// anything but constants and element-wise decompression ops.
Output<Node> slice_chain(const Output<Node>& source, std::size_t heads, std::size_t index, std::size_t stacked_rank) {
    const auto node = source.get_node_shared_ptr();
    if (const auto constant = ov::as_type_ptr<ov::op::v0::Constant>(node)) {
        const auto sliced = slice_constant(constant, heads, index, stacked_rank);
        return sliced ? sliced->output(0) : Output<Node>();
    }
    if (!ov::is_type<ov::op::v0::Convert>(node) && !ov::is_type<ov::op::v1::Subtract>(node) &&
        !ov::is_type<ov::op::v1::Multiply>(node)) {
        return {};
    }
    ov::OutputVector inputs;
    for (const auto& input : node->input_values()) {
        auto sliced = slice_chain(input, heads, index, stacked_rank);
        if (!sliced.get_node()) return {};
        inputs.push_back(sliced);
    }
    auto clone = node->clone_with_new_inputs(inputs);
    clone->get_rt_info() = node->get_rt_info();  // keeps the decompression marks the plugin's passes look for
    return clone->output(0);
}

}  // namespace

std::optional<SplitPredictor> split_predictor_heads(const std::shared_ptr<ov::Model>& model) {
    const auto result = model->output("logits").get_node_shared_ptr();
    const auto matmul = ov::as_type_ptr<ov::op::v0::MatMul>(result->get_input_node_shared_ptr(0));
    if (!matmul || matmul->get_transpose_a() || !matmul->get_transpose_b()) return std::nullopt;
    const auto gather = ov::as_type_ptr<ov::op::util::GatherBase>(matmul->get_input_node_shared_ptr(1));
    if (!gather || gather->get_axis() != 0) return std::nullopt;
    const auto head_index = ov::as_type_ptr<ov::op::v0::Parameter>(gather->get_input_node_shared_ptr(1));
    const auto& stacked = gather->get_input_partial_shape(0);
    if (!head_index || stacked.is_dynamic() || stacked.size() != 3) return std::nullopt;
    const std::size_t heads = static_cast<std::size_t>(stacked[0].get_length());

    const Output<Node> hidden = matmul->input_value(0);
    SplitPredictor split;
    for (std::size_t j = 0; j < heads; ++j) {
        auto weights = slice_chain(gather->input_value(0), heads, j, stacked.size());
        if (!weights.get_node()) return std::nullopt;
        auto input = std::make_shared<ov::op::v0::Parameter>(hidden.get_element_type(), hidden.get_partial_shape());
        input->set_friendly_name("hidden");
        input->output(0).set_names({"hidden"});
        auto logits = std::make_shared<ov::op::v0::MatMul>(input, weights, false, true);
        auto out = std::make_shared<ov::op::v0::Result>(logits);
        out->output(0).set_names({"logits"});
        split.heads.push_back(std::make_shared<ov::Model>(ov::ResultVector{out}, ov::ParameterVector{input},
                                                          "code_predictor_head_" + std::to_string(j)));
    }

    ov::ParameterVector inputs;
    for (const auto& parameter : model->get_parameters()) {
        if (parameter != head_index) inputs.push_back(parameter);
    }
    auto body_out = std::make_shared<ov::op::v0::Result>(hidden);
    body_out->output(0).set_names({"hidden"});
    split.body = std::make_shared<ov::Model>(ov::ResultVector{body_out}, model->get_sinks(), inputs,
                                             "code_predictor_body");
    return split;
}
