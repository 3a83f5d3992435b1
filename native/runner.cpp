#include "runner.hpp"

#include <algorithm>
#include <stdexcept>

#include "device.hpp"

namespace {

void check_tables(const RunnerOptions& options) {
    const std::size_t hidden = options.codec_embedding.dim;
    if (options.cp_codec_embedding.empty()) {
        throw std::invalid_argument("cp_codec_embedding has no codebooks");
    }
    for (const auto& table : options.cp_codec_embedding) {
        if (table.dim != hidden) {
            throw std::invalid_argument("cp_codec_embedding and codec_embedding disagree on the hidden size");
        }
    }
    if (options.eos_id < 0 || static_cast<std::size_t>(options.eos_id) >= options.codec_embedding.rows) {
        throw std::invalid_argument("eos_id is outside the codec vocabulary");
    }
    if (options.suppress_from < 0 || static_cast<std::size_t>(options.suppress_from) > options.codec_embedding.rows) {
        throw std::invalid_argument("suppress_from is outside the codec vocabulary");
    }
}

}  // namespace

Runner::Runner(const RunnerOptions& options)
    : device_(check_device_name(options.device)),
      codec_embedding_(options.codec_embedding),
      eos_id_(options.eos_id) {
    check_tables(options);
    const auto inference_precision = parse_inference_precision(options.inference_precision);
    // The kernel computes in f32; where the plugin would compute in bf16 or f16 the MatMuls stay its own.
    const bool native_matmuls =
        options.native_matmuls && device_ == "CPU" && native_matmul_available() &&
        inference_precision.value_or(core_.get_property(device_, ov::hint::inference_precision)) == ov::element::f32;
    talker_.emplace(core_, TalkerOptions{options.talker_xml, device_, parse_kv_precision(options.kv_precision),
                                         inference_precision, options.num_blocks, options.kv_cache_bytes,
                                         options.dynamic_quantization_group_size, native_matmuls});
    if (talker_->hidden_size() != codec_embedding_.dim || talker_->vocab_size() != codec_embedding_.rows) {
        throw std::invalid_argument("codec_embedding is [" + std::to_string(codec_embedding_.rows) + ", " +
                                    std::to_string(codec_embedding_.dim) + "] but the talker has vocabulary " +
                                    std::to_string(talker_->vocab_size()) + " and hidden size " +
                                    std::to_string(talker_->hidden_size()));
    }

    // The code predictor's own cache holds at most G+1 positions per frame: keep it at the precision the talker
    // computes in rather than quantising it (memory is no concern there, accuracy is).
    ov::AnyMap predictor_properties{ov::hint::kv_cache_precision(talker_->inference_precision())};
    if (inference_precision) {
        predictor_properties.emplace(ov::hint::inference_precision(*inference_precision));
    }
    if (options.dynamic_quantization_group_size) {  // the body's; its heads keep their own (code_predictor.cpp)
        predictor_properties.emplace(
            ov::hint::dynamic_quantization_group_size(*options.dynamic_quantization_group_size));
    }
    std::optional<BatchedVariant> batched;
    if (options.batched_from > 0) {
        batched = BatchedVariant{predictor_properties, options.batched_from};
        if (options.batched_dynamic_quantization_group_size) {
            batched->properties[ov::hint::dynamic_quantization_group_size.name()] =
                *options.batched_dynamic_quantization_group_size;
        }
    }
    predictor_.emplace(core_, options.code_predictor_xml, device_, predictor_properties, options.cp_codec_embedding,
                       batched, native_matmuls);
    filter_.emplace(CodecHeadRules{options.eos_id, options.suppress_from}, codec_embedding_.rows);
}

StepOutput Runner::step(const StepBatch& in) {
    std::lock_guard lock(mutex_);
    validate_step(in, StepLimits{hidden_size(), codec_embedding_.rows, block_size(), num_blocks()});
    talker_->infer(in);

    const std::size_t entries = in.entries();
    const std::size_t H = hidden_size();
    const std::size_t V = codec_embedding_.rows;
    const std::size_t G = num_code_groups();
    StepOutput out;
    out.codes.assign(entries * G, 0);
    out.is_eos.assign(entries, 0);
    out.next_embeds.assign(entries * H, 0.0f);
    if (in.want_logits) out.logits.resize(entries * V);

    // Codebook 0 of every emitting entry, from the talker row of its last new token. hidden_ is sized before any
    // pointer into it is taken, so rows_ stays valid for the whole step.
    hidden_.resize(entries * H);
    rows_.clear();
    owners_.clear();
    scratch_.resize(V);
    std::size_t last = 0;
    for (std::size_t s = 0; s < entries; ++s) {
        last += static_cast<std::size_t>(in.new_lens[s]);
        const float* logits = talker_->logits_row(last - 1);
        if (in.want_logits) std::copy_n(logits, V, out.logits.data() + s * V);
        if (!in.emit[s]) continue;

        std::copy_n(logits, V, scratch_.data());
        const auto history = in.history.subspan(in.history_begins[s], in.history_begins[s + 1] - in.history_begins[s]);
        filter_->apply(scratch_, in.frame_index[s] >= in.min_new_tokens, history, in.rep_penalty[s]);
        const double u = counter_uniform(in.seeds[s], in.frame_index[s], 0);
        const int32_t c0 = chooser_.choose(scratch_, {in.temperature[s], in.top_k[s], in.top_p[s]}, u);
        out.codes[s * G] = c0;
        if (c0 == eos_id_) {
            out.is_eos[s] = 1;
            continue;
        }
        std::copy_n(talker_->hidden_row(last - 1), H, hidden_.data() + s * H);
        rows_.push_back({hidden_.data() + s * H, codec_embedding_.row(static_cast<std::size_t>(c0)),
                         {in.sub_temperature[s], in.sub_top_k[s], in.sub_top_p[s]}, in.seeds[s], in.frame_index[s]});
        owners_.push_back(s);
    }
    if (rows_.empty()) return out;

    // Codebooks 1.. for all of them in one batch, then next_embed = C(c0) + sum_j E_j(c_{j+1}) + text_next.
    // predict() writes every value of both, so they are resized, not cleared.
    sub_codes_.resize(rows_.size() * (G - 1));
    sums_.resize(rows_.size() * H);
    predictor_->predict(rows_, sub_codes_.data(), sums_.data());
    for (std::size_t b = 0; b < rows_.size(); ++b) {
        const std::size_t s = owners_[b];
        std::copy_n(sub_codes_.data() + b * (G - 1), G - 1, out.codes.data() + s * G + 1);
        float* next = out.next_embeds.data() + s * H;
        const float* text = in.text_next.row(s);
        for (std::size_t i = 0; i < H; ++i) next[i] = rows_[b].c0_embedding[i] + sums_[b * H + i] + text[i];
    }
    return out;
}
