#include "step.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument("Runner.step: " + message); }

std::string at(const char* name, std::size_t entry) {
    return std::string(name) + "[" + std::to_string(entry) + "]";
}

template <class T>
void expect_length(std::span<const T> array, std::size_t length, const char* name) {
    if (array.size() != length) {
        fail(std::string(name) + " has " + std::to_string(array.size()) + " values, expected " +
             std::to_string(length));
    }
}

// begins must be 0, non-decreasing, and end at the length of the array it splits.
void expect_begins(std::span<const int32_t> begins, std::size_t entries, std::size_t total, const char* name) {
    expect_length(begins, entries + 1, name);
    if (begins[0] != 0) fail(std::string(name) + "[0] must be 0");
    for (std::size_t s = 0; s < entries; ++s) {
        if (begins[s + 1] < begins[s]) fail(std::string(name) + " must be non-decreasing");
    }
    if (static_cast<std::size_t>(begins[entries]) != total) {
        fail(std::string(name) + " ends at " + std::to_string(begins[entries]) + " but the array it splits has " +
             std::to_string(total) + " values");
    }
}

void expect_sampling(float temperature, int32_t top_k, float top_p, std::size_t s, const char* prefix) {
    const std::string p(prefix);
    if (std::isnan(temperature)) fail(at((p + "temperature").c_str(), s) + " is NaN");
    if (top_k < 0) fail(at((p + "top_k").c_str(), s) + " must be >= 0 (0 disables top-k)");
    if (!(top_p > 0.0f && top_p <= 1.0f)) fail(at((p + "top_p").c_str(), s) + " must be in (0, 1]");
}

}  // namespace

void validate_step(const StepBatch& in, const StepLimits& limits) {
    const std::size_t entries = in.entries();
    if (entries == 0) fail("the batch is empty");
    if (in.embeds.cols != limits.hidden_size) {
        fail("embeds has " + std::to_string(in.embeds.cols) + " columns, the model's hidden size is " +
             std::to_string(limits.hidden_size));
    }
    if (in.text_next.rows != entries || in.text_next.cols != limits.hidden_size) {
        fail("text_next must be [" + std::to_string(entries) + ", " + std::to_string(limits.hidden_size) + "]");
    }
    expect_length(in.past_lens, entries, "past_lens");
    expect_length(in.emit, entries, "emit");
    expect_length(in.frame_index, entries, "frame_index");
    expect_length(in.seeds, entries, "seeds");
    expect_length(in.temperature, entries, "temperature");
    expect_length(in.top_k, entries, "top_k");
    expect_length(in.top_p, entries, "top_p");
    expect_length(in.rep_penalty, entries, "rep_penalty");
    expect_length(in.sub_temperature, entries, "sub_temperature");
    expect_length(in.sub_top_k, entries, "sub_top_k");
    expect_length(in.sub_top_p, entries, "sub_top_p");
    expect_begins(in.block_table_begins, entries, in.block_table.size(), "block_table_begins");
    expect_begins(in.history_begins, entries, in.history.size(), "history_begins");
    if (in.min_new_tokens < 0) fail("min_new_tokens must be >= 0");

    std::size_t rows = 0;
    for (std::size_t s = 0; s < entries; ++s) {
        if (in.new_lens[s] < 1) fail(at("new_lens", s) + " must be >= 1");
        if (in.past_lens[s] < 0) fail(at("past_lens", s) + " must be >= 0");
        rows += static_cast<std::size_t>(in.new_lens[s]);

        // The table must already cover every position this step writes.
        const std::size_t context = static_cast<std::size_t>(in.past_lens[s]) + in.new_lens[s];
        if (context > static_cast<std::size_t>(INT32_MAX)) fail(at("past_lens", s) + " + new_lens overflows int32");
        const std::size_t needed = (context + limits.block_size - 1) / limits.block_size;
        const std::size_t given = in.block_table_begins[s + 1] - in.block_table_begins[s];
        if (given < needed) {
            fail(at("block_table", s) + " has " + std::to_string(given) + " blocks, " + std::to_string(context) +
                 " positions need " + std::to_string(needed));
        }
        if (in.emit[s] > 1) fail(at("emit", s) + " must be 0 or 1");
        if (in.emit[s] == 0) continue;
        if (in.frame_index[s] < 0) fail(at("frame_index", s) + " must be >= 0");
        if (!(in.rep_penalty[s] > 0.0f)) fail(at("rep_penalty", s) + " must be > 0");
        expect_sampling(in.temperature[s], in.top_k[s], in.top_p[s], s, "");
        expect_sampling(in.sub_temperature[s], in.sub_top_k[s], in.sub_top_p[s], s, "sub_");
    }
    if (rows != in.embeds.rows) {
        fail("new_lens sum to " + std::to_string(rows) + " rows but embeds has " + std::to_string(in.embeds.rows));
    }
    for (const int32_t block : in.block_table) {
        if (block < 0 || static_cast<std::size_t>(block) >= limits.num_blocks) {
            fail("block id " + std::to_string(block) + " is outside [0, " + std::to_string(limits.num_blocks) + ")");
        }
    }
    for (const int32_t code : in.history) {
        if (code < 0 || static_cast<std::size_t>(code) >= limits.vocab_size) {
            fail("history code " + std::to_string(code) + " is outside [0, " + std::to_string(limits.vocab_size) +
                 ")");
        }
    }
}
