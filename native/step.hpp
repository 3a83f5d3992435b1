#pragma once
// The arrays of one Runner.step call, as views of the caller's buffers, and the outputs it produces. The member names
// are the fields of wyoming_chorus/engine/step_batch.py, which bindings.cpp reads by name.
// Layout of the flat arrays (S entries, N = sum of new_lens rows):
//
//   embeds        [N, H]   entry 0's new rows | entry 1's new rows | ...
//   block_table   [sum b]  entry 0's blocks   | entry 1's blocks   | ...   (block_table_begins [S+1] splits it)
//   history       [sum h]  entry 0's c0 codes | entry 1's c0 codes | ...   (history_begins [S+1] splits it)
//   every other array has one value (or one row of text_next [S, H]) per entry.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

template <class T>
struct Matrix {
    std::span<const T> data;
    std::size_t rows = 0;
    std::size_t cols = 0;

    const T* row(std::size_t index) const { return data.data() + index * cols; }
};

struct StepBatch {
    Matrix<float> embeds;
    std::span<const int32_t> new_lens;
    std::span<const int32_t> past_lens;
    std::span<const int32_t> block_table;
    std::span<const int32_t> block_table_begins;
    std::span<const uint8_t> emit;
    Matrix<float> text_next;
    std::span<const int32_t> frame_index;
    std::span<const uint64_t> seeds;
    std::span<const float> temperature;
    std::span<const int32_t> top_k;
    std::span<const float> top_p;
    std::span<const float> rep_penalty;
    std::span<const float> sub_temperature;
    std::span<const int32_t> sub_top_k;
    std::span<const float> sub_top_p;
    std::span<const int32_t> history;
    std::span<const int32_t> history_begins;
    int64_t min_new_tokens = 0;
    bool want_logits = false;

    std::size_t entries() const { return new_lens.size(); }
};

// What the runner's loaded models fix about every step.
struct StepLimits {
    std::size_t hidden_size;
    std::size_t vocab_size;
    std::size_t block_size;
    std::size_t num_blocks;
};

// Throws std::invalid_argument (ValueError in Python) naming the first inconsistency found.
void validate_step(const StepBatch& in, const StepLimits& limits);

struct StepOutput {
    std::vector<int32_t> codes;       // [S, groups]
    std::vector<uint8_t> is_eos;      // [S]
    std::vector<float> next_embeds;   // [S, H]
    std::vector<float> logits;        // [S, V] when wanted, else empty
};
