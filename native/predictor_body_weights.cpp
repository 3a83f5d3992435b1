// Reading the code predictor body's weights back from its graph (predictor_body.hpp), by the graph's structure:
// graphs/transformer.py names nothing, and NNCF renames what it compresses. What is read:
//   - the products: every CompressedMatMul in order along the residual stream: [projection,] then per layer
//     q/k/v, o, gate/up, down (each depends on the one before, so the order is the graph's);
//   - the RMSNorms: each ReduceMean(Power(x, 2)) -> Add(eps) -> Sqrt -> Divide -> Multiply(x, ·) -> Multiply(·, gain).
//     Those of hidden width come in order (input, post-attention per layer, then the final one); those of head width
//     normalise a Reshape of the q/k/v split's output 0 (q) or 1 (k), of the layer whose q/k/v product feeds it;
//   - RoPE's inverse frequencies: the constant multiplied into the angles that Cos reads;
//   - the split sizes (heads x head_dim, kv heads x head_dim twice) from the q/k/v VariadicSplit.
// Anything else (a product left to the plugin, another count of norms) and the answer is nothing.
#include <algorithm>
#include <map>

#include <openvino/op/add.hpp>
#include <openvino/op/constant.hpp>
#include <openvino/op/convert.hpp>
#include <openvino/op/cos.hpp>
#include <openvino/op/divide.hpp>
#include <openvino/op/matmul.hpp>
#include <openvino/op/multiply.hpp>
#include <openvino/op/power.hpp>
#include <openvino/op/reduce_mean.hpp>
#include <openvino/op/reshape.hpp>
#include <openvino/op/sqrt.hpp>
#include <openvino/op/variadic_split.hpp>

#include "compressed_matmul.hpp"
#include "predictor_body.hpp"

namespace {

using NodePtr = std::shared_ptr<ov::Node>;

// A Constant, or a Constant stored in a smaller float type and converted, as f32 values; nothing otherwise.
std::optional<std::vector<float>> floats_of(const ov::Output<ov::Node>& value) {
    NodePtr node = value.get_node_shared_ptr();
    if (ov::is_type<ov::op::v0::Convert>(node)) node = node->input_value(0).get_node_shared_ptr();
    const auto constant = ov::as_type_ptr<ov::op::v0::Constant>(node);
    if (!constant) return std::nullopt;
    return constant->cast_vector<float>();
}

// The only consumer of `node`'s first output of type T, else nullptr.
template <class T>
NodePtr sole_consumer(const NodePtr& node) {
    const auto targets = node->output(0).get_target_inputs();
    if (targets.size() != 1) return nullptr;
    NodePtr next = targets.begin()->get_node()->shared_from_this();
    return ov::is_type<T>(next) ? next : nullptr;
}

// The other input of a binary op than `from`.
ov::Output<ov::Node> other_input(const NodePtr& op, const NodePtr& from) {
    return op->input_value(0).get_node_shared_ptr() == from ? op->input_value(1) : op->input_value(0);
}

struct Norm {
    ov::Output<ov::Node> x;  // what it normalises
    std::vector<float> gain;
    float eps;
};

std::optional<Norm> norm_at(const NodePtr& mean) {
    const NodePtr power = mean->input_value(0).get_node_shared_ptr();
    if (!ov::is_type<ov::op::v1::Power>(power)) return std::nullopt;
    const NodePtr add = sole_consumer<ov::op::v1::Add>(mean);
    if (!add) return std::nullopt;
    const auto eps = floats_of(other_input(add, mean));
    const NodePtr root = sole_consumer<ov::op::v0::Sqrt>(add);
    const NodePtr divide = root ? sole_consumer<ov::op::v1::Divide>(root) : nullptr;
    const NodePtr scaled = divide ? sole_consumer<ov::op::v1::Multiply>(divide) : nullptr;
    const NodePtr gained = scaled ? sole_consumer<ov::op::v1::Multiply>(scaled) : nullptr;
    if (!eps || eps->size() != 1 || !gained) return std::nullopt;
    auto gain = floats_of(other_input(gained, scaled));
    if (!gain) return std::nullopt;
    return Norm{power->input_value(0), std::move(*gain), eps->front()};
}

}  // namespace

std::optional<PredictorBodyWeights> predictor_body_weights(const std::shared_ptr<ov::Model>& body) {
    std::vector<std::shared_ptr<CompressedMatMul>> products;
    std::vector<Norm> wide, narrow;
    std::vector<float> inv_freq;
    std::size_t cosines = 0;
    for (const auto& op : body->get_ordered_ops()) {
        if (const auto product = ov::as_type_ptr<CompressedMatMul>(op)) {
            products.push_back(product);
        } else if (ov::is_type<ov::op::v0::MatMul>(op)) {
            return std::nullopt;  // a product the kernel did not take
        } else if (ov::is_type<ov::op::v1::ReduceMean>(op)) {
            auto norm = norm_at(op);
            if (!norm) return std::nullopt;
            (ov::is_type<ov::op::v1::Reshape>(norm->x.get_node()) ? narrow : wide).push_back(std::move(*norm));
        } else if (ov::is_type<ov::op::v0::Cos>(op)) {
            ++cosines;  // Cos(Concat(angles, angles)), angles = positions * inv_freq
            const NodePtr concat = op->input_value(0).get_node_shared_ptr();
            const NodePtr angles = concat->input_value(0).get_node_shared_ptr();
            if (!ov::is_type<ov::op::v1::Multiply>(angles)) return std::nullopt;
            for (const auto& input : angles->input_values()) {
                if (auto values = floats_of(input)) inv_freq = std::move(*values);
            }
        }
    }
    const std::size_t layers = narrow.size() / 2;
    const bool projected = products.size() == 4 * layers + 1;
    if (layers == 0 || narrow.size() != 2 * layers || wide.size() != 2 * layers + 1 || cosines != 1 ||
        (products.size() != 4 * layers && !projected)) {
        return std::nullopt;
    }

    PredictorBodyWeights w;
    auto product = products.begin();
    if (projected) {
        const NodePtr first = *product++;
        const NodePtr add = sole_consumer<ov::op::v1::Add>(first);
        auto bias = add ? floats_of(other_input(add, first)) : std::nullopt;
        if (!bias) return std::nullopt;
        w.projection = ov::as_type_ptr<CompressedMatMul>(first)->weights();
        w.projection_bias = std::move(*bias);
    }
    std::map<const ov::Node*, std::size_t> layer_of_qkv;
    for (std::size_t l = 0; l < layers; ++l) {
        PredictorBodyWeights::Layer layer;
        layer_of_qkv[product->get()] = l;
        layer.qkv = (*product++)->weights();
        layer.o = (*product++)->weights();
        layer.gate_up = (*product++)->weights();
        layer.down = (*product++)->weights();
        layer.input_norm = std::move(wide[2 * l].gain);
        layer.post_norm = std::move(wide[2 * l + 1].gain);
        w.layers.push_back(std::move(layer));
    }
    w.final_norm = std::move(wide.back().gain);
    w.eps = wide.back().eps;
    for (auto& norm : narrow) {
        // Reshape <- VariadicSplit:0 (q) or :1 (k) <- the layer's q/k/v product
        const ov::Output<ov::Node> split_out = norm.x.get_node()->input_value(0);
        const auto split = ov::as_type_ptr<ov::op::v1::VariadicSplit>(split_out.get_node_shared_ptr());
        const auto found = split ? layer_of_qkv.find(split->input_value(0).get_node()) : layer_of_qkv.end();
        if (found == layer_of_qkv.end() || split_out.get_index() > 1) return std::nullopt;
        auto& layer = w.layers[found->second];
        (split_out.get_index() == 0 ? layer.q_norm : layer.k_norm) = std::move(norm.gain);
        if (found->second == 0 && split_out.get_index() == 0) {
            const auto lengths = ov::as_type_ptr<ov::op::v0::Constant>(split->input_value(2).get_node_shared_ptr());
            if (!lengths) return std::nullopt;
            const auto sizes = lengths->cast_vector<int64_t>();
            if (sizes.size() != 3 || sizes[1] != sizes[2]) return std::nullopt;
            w.head_dim = w.layers[0].q_norm.size();
            if (w.head_dim == 0) return std::nullopt;
            w.heads = static_cast<std::size_t>(sizes[0]) / w.head_dim;
            w.kv_heads = static_cast<std::size_t>(sizes[1]) / w.head_dim;
        }
    }
    w.hidden = w.final_norm.size();
    w.input_width = w.projection ? w.projection->k : w.hidden;
    w.intermediate = w.layers[0].gate_up->n / 2;
    const std::size_t d = w.head_dim;
    if (w.heads == 0 || w.kv_heads == 0 || w.heads % w.kv_heads != 0 || inv_freq.size() * 2 != d ||
        d > PredictorBody::kMaxHeadDim) {
        return std::nullopt;
    }
    w.inv_freq = std::move(inv_freq);
    if (w.projection && (w.projection->n != w.hidden || w.projection_bias.size() != w.hidden)) return std::nullopt;
    for (const auto& layer : w.layers) {
        const bool shapes = layer.qkv->k == w.hidden && layer.qkv->n == (w.heads + 2 * w.kv_heads) * d &&
                            layer.o->k == w.heads * d && layer.o->n == w.hidden && layer.gate_up->k == w.hidden &&
                            layer.gate_up->n == 2 * w.intermediate && layer.down->k == w.intermediate &&
                            layer.down->n == w.hidden && layer.input_norm.size() == w.hidden &&
                            layer.post_norm.size() == w.hidden && layer.q_norm.size() == d && layer.k_norm.size() == d;
        if (!shapes) return std::nullopt;
    }
    return w;
}
