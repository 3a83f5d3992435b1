#include "talker.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include <openvino/pass/manager.hpp>
#include <openvino/pass/sdpa_to_paged_attention.hpp>

namespace {

std::shared_ptr<ov::Model> read_paged(ov::Core& core, const std::string& xml) {
    auto model = core.read_model(xml);
    ov::pass::Manager manager;
    manager.register_pass<ov::pass::SDPAToPagedAttention>();
    manager.run_passes(model);
    return model;
}

// Anything else would be left unset at infer time (e.g. a graph the conversion did not fully rewrite).
void expect_paged_inputs(const ov::CompiledModel& compiled) {
    static const std::set<std::string> expected{"inputs_embeds",      "position_ids",  "past_lens",
                                                "subsequence_begins", "block_indices", "block_indices_begins",
                                                "max_context_len"};
    for (const auto& input : compiled.inputs()) {
        const std::string& name = input.get_any_name();
        if (expected.count(name) || name.rfind("key_cache.", 0) == 0 || name.rfind("value_cache.", 0) == 0) {
            continue;
        }
        throw std::runtime_error("the talker has input '" + name +
                                 "' after the PagedAttention conversion; is talker.xml a stateful SDPA graph?");
    }
}

std::size_t static_last_dim(const ov::Output<const ov::Node>& port, std::size_t rank) {
    const auto& shape = port.get_partial_shape();
    if (shape.rank().is_dynamic() || shape.size() != rank || shape[rank - 1].is_dynamic()) {
        throw std::runtime_error("paged talker port " + port.get_any_name() + " has shape " + shape.to_string() +
                                 ", expected rank " + std::to_string(rank) + " with a static last dimension");
    }
    return static_cast<std::size_t>(shape[rank - 1].get_length());
}

// A zero-filled tensor of the port's type with one row: every dynamic dimension 1, the static ones as they are.
// One row rather than none keeps it an ordinary shape for any plugin (empty tensors are an edge case of their own).
ov::Tensor one_row_tensor(const ov::Output<const ov::Node>& port) {
    ov::Shape shape;
    for (const auto& dim : port.get_partial_shape()) {
        shape.push_back(dim.is_static() ? static_cast<std::size_t>(dim.get_length()) : 1);
    }
    ov::Tensor tensor(port.get_element_type(), shape);
    std::memset(tensor.data(), 0, tensor.get_byte_size());
    return tensor;
}

}  // namespace

PagedTalker::PagedTalker(ov::Core& core, const TalkerOptions& options) {
    ov::AnyMap properties{ov::hint::kv_cache_precision(options.kv_precision)};
    if (options.inference_precision) {
        properties.emplace(ov::hint::inference_precision(*options.inference_precision));
    }
    if (options.dynamic_quantization_group_size) {
        properties.emplace(ov::hint::dynamic_quantization_group_size(*options.dynamic_quantization_group_size));
    }
    auto model = read_paged(core, options.xml);
    if (options.native_matmuls) native_matmuls_ = use_native_matmuls(model);
    compiled_ = core.compile_model(model, options.device, properties);
    expect_paged_inputs(compiled_);
    request_ = compiled_.create_infer_request();

    // After the conversion: inputs_embeds [N, H] (H left dynamic by the pass) and one output row per new token,
    // [N, 1, C]; the sizes are read from the outputs.
    if (compiled_.input("inputs_embeds").get_partial_shape().rank() != ov::Dimension(2)) {
        throw std::runtime_error("the paged talker's inputs_embeds is not [tokens, hidden]");
    }
    hidden_size_ = static_last_dim(compiled_.output("hidden"), 3);
    vocab_size_ = static_last_dim(compiled_.output("logits"), 3);

    cache_.emplace(compiled_, options.device, options.num_blocks, options.cache_bytes);
    cache_->bind(request_);
    max_context_len_ = ov::Tensor(ov::element::i32, ov::Shape{});

    ports_ = {.inputs_embeds = compiled_.input("inputs_embeds"),
              .position_ids = compiled_.input("position_ids"),
              .past_lens = compiled_.input("past_lens"),
              .subsequence_begins = compiled_.input("subsequence_begins"),
              .block_indices = compiled_.input("block_indices"),
              .block_indices_begins = compiled_.input("block_indices_begins"),
              .max_context_len = compiled_.input("max_context_len"),
              .logits = compiled_.output("logits"),
              .hidden = compiled_.output("hidden")};
    for (const auto& port : {ports_.inputs_embeds, ports_.position_ids, ports_.past_lens, ports_.subsequence_begins,
                             ports_.block_indices, ports_.block_indices_begins}) {
        parking_.push_back({port, one_row_tensor(port)});
    }
    // Owned and rewritten in place each infer, so (like the caches) it stays bound for good.
    request_.set_tensor(ports_.max_context_len, max_context_len_);
    park_inputs();
}

ov::element::Type PagedTalker::inference_precision() const {
    return compiled_.get_property(ov::hint::inference_precision);
}

void PagedTalker::infer(const StepBatch& in) {
    const std::size_t entries = in.entries();
    const std::size_t rows = in.embeds.rows;
    position_ids_.resize(rows);
    subsequence_begins_.assign(entries + 1, 0);
    int32_t max_context = 0;
    std::size_t row = 0;
    for (std::size_t s = 0; s < entries; ++s) {
        const int32_t past = in.past_lens[s];
        for (int32_t i = 0; i < in.new_lens[s]; ++i) position_ids_[row++] = past + i;
        subsequence_begins_[s + 1] = subsequence_begins_[s] + in.new_lens[s];
        max_context = std::max(max_context, past + in.new_lens[s]);
    }
    max_context_len_.data<int32_t>()[0] = max_context;

    try {
        set_inputs(in);
        request_.infer();
    } catch (...) {
        park_inputs();
        throw;
    }
    logits_ = request_.get_tensor(ports_.logits).data<const float>();
    hidden_ = request_.get_tensor(ports_.hidden).data<const float>();
    park_inputs();
}

// Input tensors wrap the caller's buffers (never written by the plugin): no copies of the embeddings. They are
// views only for the length of infer(); park_inputs() takes them off the request again.
void PagedTalker::set_inputs(const StepBatch& in) {
    const std::size_t entries = in.entries();
    const std::size_t rows = in.embeds.rows;
    auto wrap = [](auto span, ov::element::Type type, ov::Shape shape) {
        return ov::Tensor(type, shape, const_cast<void*>(static_cast<const void*>(span.data())));
    };
    request_.set_tensor(ports_.inputs_embeds, wrap(in.embeds.data, ov::element::f32, {rows, hidden_size_}));
    request_.set_tensor(ports_.position_ids, wrap(std::span<const int64_t>(position_ids_), ov::element::i64, {rows}));
    request_.set_tensor(ports_.past_lens, wrap(in.past_lens, ov::element::i32, {entries}));
    request_.set_tensor(ports_.subsequence_begins,
                        wrap(std::span<const int32_t>(subsequence_begins_), ov::element::i32, {entries + 1}));
    request_.set_tensor(ports_.block_indices, wrap(in.block_table, ov::element::i32, {in.block_table.size()}));
    request_.set_tensor(ports_.block_indices_begins, wrap(in.block_table_begins, ov::element::i32, {entries + 1}));
}

// The caller's arrays (numpy buffers from Python) are freed once step() returns, and position_ids_ /
// subsequence_begins_ may move when the next step resizes them; a view left on the request would point at freed
// memory until the next set_inputs. So after every infer, successful or not, each viewed input is reset to a small
// tensor the talker owns. Resetting costs a few set_tensor calls a step; copying into owned buffers instead would
// copy the [N, H] embeddings every step. (logits_ / hidden_ point at output tensors the request itself owns.)
void PagedTalker::park_inputs() {
    for (const auto& [port, parked] : parking_) request_.set_tensor(port, parked);
}

uint64_t PagedTalker::dynamic_quantization_group_size() const {
    return compiled_.get_property(ov::hint::dynamic_quantization_group_size);
}

const float* PagedTalker::logits_row(std::size_t row) const { return logits_ + row * vocab_size_; }

const float* PagedTalker::hidden_row(std::size_t row) const { return hidden_ + row * hidden_size_; }
