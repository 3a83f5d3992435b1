#pragma once
// The code predictor (sub-talker): codebooks 1..G-1 of a frame, batched across every entry that emits one.
// Its cache lives for a single frame (at most G+1 positions), so it stays a small stateful graph, reset per frame:
//   infer [B, 2, H] = (talker hidden, C(c0))  with head 0 -> c1
//   infer [B, 1, H] = E_{j-1}(c_j)            with head j -> c_{j+1},  j = 1 .. G-2
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <openvino/runtime/core.hpp>

#include "compressed_matmul.hpp"
#include "kernels.hpp"
#include "predictor_body.hpp"
#include "sampling.hpp"
#include "tables.hpp"

// One emitting entry's inputs; the pointers are [H] rows that stay valid during predict().
struct PredictorRow {
    const float* talker_hidden;
    const float* c0_embedding;
    SamplingParams params;
    uint64_t seed;
    int32_t frame_index;
};

// A second compile of the body for large batches: the plugin's best activation quantisation differs by batch size
// (engine/lm_precision.py). The body's state lives for one frame, so each frame may run on either.
struct BatchedVariant {
    ov::AnyMap properties;
    std::size_t from_batch;
};

class CodePredictor {
public:
    CodePredictor(ov::Core& core, const std::string& xml, const std::string& device, const ov::AnyMap& properties,
                  EmbeddingTables tables, const std::optional<BatchedVariant>& batched = std::nullopt,
                  bool native_matmuls = false);

    // codes: [B, tables] (codebooks 1..), embedding_sum: [B, H] = sum_j E_j(c_{j+1}).
    void predict(const std::vector<PredictorRow>& rows, int32_t* codes, float* embedding_sum);

    std::size_t num_codebooks() const { return tables_.size(); }
    // The body's kernels, then one head's (all heads compile alike).
    std::vector<KernelInfo> kernels() const;
    // True where the body runs on the runner's own code (predictor_body.hpp) rather than through the plugin.
    bool native_body() const { return native_body_.has_value(); }
    // True when the output heads were split off the body (predictor_heads.hpp).
    bool split_heads() const { return !heads_.empty() || !head_weights_.empty(); }
    // The compressed-weight MatMuls run by our kernel: the body's, and the heads' (see the constructor).
    const NativeMatMuls& native_matmuls() const { return native_matmuls_; }

private:
    void update_views(std::size_t batch);
    // One infer of head `head` for the current inputs; the logits stay valid until the next infer.
    const float* infer_logits(std::size_t head);
    // The same on the native body: `rows` new positions of inputs_ per entry.
    const float* native_logits(std::size_t head, std::size_t batch, std::size_t rows);

    // The body when split, else the whole graph with its head_index input; its ports looked up once rather than by
    // name for each of the G-1 infers of a frame (out: hidden when split, else logits).
    struct Body {
        Body(ov::Core& core, const std::shared_ptr<ov::Model>& model, const std::string& device,
             const ov::AnyMap& properties, const char* out_name);
        ov::CompiledModel compiled;
        ov::InferRequest request;
        ov::Output<const ov::Node> inputs;
        ov::Output<const ov::Node> out;
    };
    std::vector<Body> bodies_;  // [0]: every batch; [1], if any: batches of batched_from_ and more; none if native
    std::size_t batched_from_ = 0;
    NativeMatMuls native_matmuls_;
    Body* active_ = nullptr;  // the one this frame runs on
    std::vector<ov::CompiledModel> heads_;  // empty when unsplit or run directly (head_weights_)
    std::vector<ov::InferRequest> head_requests_;
    // Where every head is one product on our kernel: its weights, run straight on the body's output (exact_matmul)
    // instead of through an infer of its own, and the logits they write.
    std::vector<std::shared_ptr<const PackedWeights>> head_weights_;
    std::vector<float> logits_;
    // Where the body's products are all on the kernel and the heads run directly: the body without the plugin.
    std::optional<PredictorBody> native_body_;
    std::vector<float> hidden_;
    EmbeddingTables tables_;
    std::size_t hidden_size_;
    std::size_t codebook_size_;
    ov::Tensor head_index_;
    std::vector<float> inputs_;
    // Views of inputs_ as the first infer's [B, 2, H] and the later ones' [B, 1, H], made again only when the
    // batch size or inputs_' buffer changes (not as a new ov::Tensor for every infer).
    ov::Tensor first_view_;
    ov::Tensor next_view_;
    std::size_t view_batch_ = 0;
    const float* view_data_ = nullptr;
    std::vector<float> scratch_;
    TokenChooser chooser_;
};
