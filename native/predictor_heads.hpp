#pragma once
// The code predictor as exported picks its output head inside the graph: logits = hidden @ Gather(heads, j)^T over
// all G-1 stacked heads. The CPU plugin runs that Gather for every call (a reference kernel copying, and for
// compressed weights decompressing, a whole [vocab, H] slab: 15-30% of each of the 15 calls per frame at batch 1),
// and the matrix product after it cannot use prepacked weights. Split at load into the body (everything up to
// `hidden`) and one small model per head whose weights are constants again, so each head is an ordinary
// (compressed) FullyConnected. Exported directories stay as they are; a graph of another shape is served unsplit.
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include <openvino/core/model.hpp>

struct SplitPredictor {
    std::shared_ptr<ov::Model> body;                 // inputs_embeds -> "hidden" [B, H]; the model's KV state
    std::vector<std::shared_ptr<ov::Model>> heads;   // "hidden" [B, H] -> "logits" [B, vocab], one per head index
};

// nullopt when the graph does not end in MatMul(hidden, Gather(stacked heads, head_index), transpose_b) over a
// chain of constants and element-wise decompression ops (Convert / Subtract / Multiply).
std::optional<SplitPredictor> split_predictor_heads(const std::shared_ptr<ov::Model>& model);
