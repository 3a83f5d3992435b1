#pragma once
// The code predictor's body (its decoder layers and final norm; the heads are predictor_heads.hpp's) run by the
// runner's own code where every product in it is on our kernel. Through the plugin, a frame's 15 infers of the
// body's ~200 small nodes (norms, RoPE, attention over at most 17 positions, splits, transposes, the state's
// ReadValue/Assign) cost ~12-18 ms beyond its products on 2 Zen 4 cores at one row (docs/experiments.md), where the
// products themselves stream 1.2 GB from memory in ~30-45 ms. Here the small parts are a few loops over a few
// thousand floats, and the products are the same calls on the same packed weights as the plugin's CompressedMatMul
// nodes, so the codes match the plugin's up to float rounding in the small parts.
//
// The weights are read back from the body's graph after use_native_matmuls (predictor_body_weights): what
// graphs/code_predictor.py builds, whatever the sizes. A graph of another shape gives no weights, and the plugin
// runs the body as before.
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include <openvino/core/model.hpp>

#include "vnni_matmul.hpp"

struct PredictorBodyWeights {
    struct Layer {
        std::vector<float> input_norm, q_norm, k_norm, post_norm;  // RMSNorm gains: [hidden], [head_dim] twice
        std::shared_ptr<const PackedWeights> qkv, o, gate_up, down;
    };
    std::size_t input_width = 0;  // the talker's hidden size (the inputs' width)
    std::size_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
    float eps = 1e-6f;
    std::vector<float> inv_freq;                      // RoPE: [head_dim / 2]
    std::shared_ptr<const PackedWeights> projection;  // input_width -> hidden where they differ, with its bias
    std::vector<float> projection_bias;
    std::vector<Layer> layers;
    std::vector<float> final_norm;
};

// The body's weights, or nothing where the graph is not the decoder stack this expects with every product on the
// kernel (call after use_native_matmuls).
std::optional<PredictorBodyWeights> predictor_body_weights(const std::shared_ptr<ov::Model>& body);

class PredictorBody {
public:
    static constexpr std::size_t kMaxHeadDim = 512;  // a query head is rotated in a buffer on the stack

    explicit PredictorBody(PredictorBodyWeights weights);

    // A new frame for `batch` entries: empty history with room for `max_positions`.
    void reset(std::size_t batch, std::size_t max_positions);
    // x: [batch][rows][input_width], the next `rows` positions of every entry; hidden: [batch][hidden], the last
    // row's output after the final norm (what the heads read).
    void run(const float* x, std::size_t rows, float* hidden);
    std::size_t hidden_size() const { return w_.hidden; }

private:
    void attend(std::size_t layer, std::size_t rows);

    PredictorBodyWeights w_;
    std::size_t batch_ = 0, capacity_ = 0, length_ = 0;
    std::vector<float> keys_, values_;  // [batch][layers][kv_heads][capacity][head_dim]
    std::vector<float> cos_, sin_;      // RoPE: [position][head_dim / 2]
    std::vector<float> x_, normed_, qkv_, attn_, out_, gate_up_, act_, scores_;  // reused every call
};
