#pragma once
// The native runner: executes one scheduled step (talker over every new row, sampling of codebook 0, the code
// predictor for the emitting entries, the next input embeddings). It owns the compiled models and the paged
// cache, never policy: which rows run and which blocks they use is the caller's decision.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <openvino/runtime/core.hpp>

#include "code_predictor.hpp"
#include "sampling.hpp"
#include "step.hpp"
#include "tables.hpp"
#include "talker.hpp"

struct RunnerOptions {
    std::string talker_xml;
    std::string code_predictor_xml;
    EmbeddingTable codec_embedding;       // C: [V, H]
    EmbeddingTables cp_codec_embedding;   // E_j: G-1 tables of [codebook, H]
    std::string device;                   // CPU | GPU | GPU.N
    std::string kv_precision;             // u8 | f16 | bf16 | f32
    std::string inference_precision;      // "" | f32 | bf16 | f16
    std::size_t num_blocks;               // 0: derive from kv_cache_bytes
    std::size_t kv_cache_bytes;
    int32_t eos_id;
    int32_t suppress_from;
    // DYNAMIC_QUANTIZATION_GROUP_SIZE of the talker and the code predictor's body (the plugin quantises the
    // activations of compressed-weight products to int8 in groups this long); unset: the plugin's default.
    std::optional<uint64_t> dynamic_quantization_group_size;
    // The code predictor's body compiled a second time with this group, run for batches of `batched_from` entries
    // and more (0: no second compile).
    std::optional<uint64_t> batched_dynamic_quantization_group_size;
    std::size_t batched_from = 0;
    // Run the talker's and the code predictor body's compressed-weight MatMuls with vnni_matmul where it can
    // (compressed_matmul.hpp): on the CPU, with AVX-512 VNNI or AVX2, computing in f32.
    bool native_matmuls = false;
};

class Runner {
public:
    explicit Runner(const RunnerOptions& options);

    StepOutput step(const StepBatch& in);

    std::size_t block_size() const { return talker_->cache().block_size(); }
    std::size_t num_blocks() const { return talker_->cache().num_blocks(); }
    std::size_t bytes_per_block() const { return talker_->cache().bytes_per_block(); }
    std::size_t hidden_size() const { return talker_->hidden_size(); }
    std::size_t num_code_groups() const { return 1 + predictor_->num_codebooks(); }
    const std::string& device() const { return device_; }
    std::string kv_precision() const { return talker_->cache().element_type().to_string(); }
    std::vector<KernelInfo> talker_kernels() const { return talker_->kernels(); }
    std::vector<KernelInfo> predictor_kernels() const { return predictor_->kernels(); }
    bool predictor_heads_split() const { return predictor_->split_heads(); }
    uint64_t dynamic_quantization_group_size() const { return talker_->dynamic_quantization_group_size(); }
    // MatMuls run by vnni_matmul: talker, code predictor body.
    std::pair<std::size_t, std::size_t> native_matmuls() const {
        return {talker_->native_matmuls().replaced, predictor_->native_matmuls().replaced};
    }

private:
    ov::Core core_;
    std::string device_;
    EmbeddingTable codec_embedding_;
    int32_t eos_id_;
    std::optional<PagedTalker> talker_;
    std::optional<CodePredictor> predictor_;
    std::optional<CodebookZeroFilter> filter_;
    TokenChooser chooser_;
    // Per-step scratch, kept as members so their capacity is reused step after step (StepOutput's vectors are
    // handed to Python, so those are new each step).
    std::vector<float> scratch_;               // [V]: one row of codebook-0 logits being filtered and sampled
    std::vector<float> hidden_;                // [S, H]: talker hidden rows of the emitting entries
    std::vector<PredictorRow> rows_;           // the code predictor's batch (pointers into hidden_)
    std::vector<std::size_t> owners_;          // the entry of each of rows_
    std::vector<int32_t> sub_codes_;           // [B, G-1]: codebooks 1.. of the batch
    std::vector<float> sums_;                  // [B, H]: sum_j E_j(c_{j+1}) of the batch
    // The infer requests and scratch buffers are single-use: concurrent steps take turns.
    std::mutex mutex_;
};
