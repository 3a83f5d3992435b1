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

class CodePredictor {
public:
    CodePredictor(ov::Core& core, const std::string& xml, const std::string& device, const ov::AnyMap& properties,
                  EmbeddingTables tables);

    // codes: [B, tables] (codebooks 1..), embedding_sum: [B, H] = sum_j E_j(c_{j+1}).
    void predict(const std::vector<PredictorRow>& rows, int32_t* codes, float* embedding_sum);

    std::size_t num_codebooks() const { return tables_.size(); }

private:
    ov::CompiledModel compiled_;
    ov::InferRequest request_;
    EmbeddingTables tables_;
    std::size_t hidden_size_;
    std::size_t codebook_size_;
    ov::Tensor head_index_;
    std::vector<float> inputs_;
    std::vector<float> scratch_;
    TokenChooser chooser_;
};
