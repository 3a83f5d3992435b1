#pragma once
// The talker converted to PagedAttention: one infer runs every new row of every entry (prefill chunks and
// decodes mixed), reading and writing K/V through the entries' block tables.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <openvino/runtime/core.hpp>

#include "compressed_matmul.hpp"
#include "kernels.hpp"
#include "paged_cache.hpp"
#include "step.hpp"

struct TalkerOptions {
    std::string xml;
    std::string device;
    ov::element::Type kv_precision;
    std::optional<ov::element::Type> inference_precision;
    std::size_t num_blocks;
    std::size_t cache_bytes;
    std::optional<uint64_t> dynamic_quantization_group_size;
    bool native_matmuls = false;  // compressed-weight MatMuls run by vnni_matmul (compressed_matmul.hpp)
};

class PagedTalker {
public:
    PagedTalker(ov::Core& core, const TalkerOptions& options);

    // Runs the step's rows; afterwards logits_row / hidden_row read row r of this infer (until the next one). The
    // request keeps no view of `in` once it returns.
    void infer(const StepBatch& in);
    const float* logits_row(std::size_t row) const;
    const float* hidden_row(std::size_t row) const;

    std::size_t hidden_size() const { return hidden_size_; }
    std::size_t vocab_size() const { return vocab_size_; }
    const PagedCache& cache() const { return *cache_; }
    // What the plugin actually runs at (its default when none was asked for).
    ov::element::Type inference_precision() const;
    uint64_t dynamic_quantization_group_size() const;
    const NativeMatMuls& native_matmuls() const { return native_matmuls_; }
    std::vector<KernelInfo> kernels() const { return executed_kernels(compiled_); }

private:
    // The ports infer uses, looked up once: by port, set_tensor / get_tensor search no names and build no
    // std::string per call (the longer names, e.g. "block_indices_begins", do not fit the small-string buffer).
    struct Ports {
        ov::Output<const ov::Node> inputs_embeds, position_ids, past_lens, subsequence_begins, block_indices,
            block_indices_begins, max_context_len, logits, hidden;
    };
    // An input that infer sets to a view of a buffer which may be freed or moved once it returns (the caller's
    // arrays, position_ids_, subsequence_begins_), and the talker-owned tensor it is reset to afterwards.
    struct Parking {
        ov::Output<const ov::Node> port;
        ov::Tensor parked;
    };

    void set_inputs(const StepBatch& in);
    void park_inputs();

    NativeMatMuls native_matmuls_;
    ov::CompiledModel compiled_;
    ov::InferRequest request_;
    std::optional<PagedCache> cache_;
    Ports ports_;
    std::vector<Parking> parking_;
    std::size_t hidden_size_ = 0;
    std::size_t vocab_size_ = 0;
    // Per-infer inputs, kept as members so their buffers are reused step after step.
    std::vector<int64_t> position_ids_;
    std::vector<int32_t> subsequence_begins_;
    ov::Tensor max_context_len_;
    // The last infer's outputs, valid until the next infer overwrites them.
    const float* logits_ = nullptr;
    const float* hidden_ = nullptr;
};
