#include "code_predictor.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <openvino/op/parameter.hpp>
#include <openvino/op/result.hpp>

#include "predictor_heads.hpp"

namespace {

void check_logits(const ov::CompiledModel& compiled, std::size_t codebook_size) {
    const auto& logits = compiled.output("logits").get_partial_shape();
    if (logits.rank().is_dynamic() || logits.size() != 2 || logits[1].is_dynamic() ||
        static_cast<std::size_t>(logits[1].get_length()) != codebook_size) {
        throw std::runtime_error("code predictor logits have shape " + logits.to_string() + ", expected [B, " +
                                 std::to_string(codebook_size) + "]");
    }
}

// The weights of a head that is nothing but one product on our kernel (Parameter -> CompressedMatMul -> Result),
// else nullptr.
std::shared_ptr<const PackedWeights> lone_product(const std::shared_ptr<ov::Model>& head) {
    std::shared_ptr<const PackedWeights> weights;
    for (const auto& op : head->get_ordered_ops()) {
        if (ov::is_type<ov::op::v0::Parameter>(op) || ov::is_type<ov::op::v0::Result>(op)) continue;
        const auto product = ov::as_type_ptr<CompressedMatMul>(op);
        if (!product || weights) return nullptr;
        weights = product->weights();
    }
    return weights;
}

}  // namespace

CodePredictor::Body::Body(ov::Core& core, const std::shared_ptr<ov::Model>& model, const std::string& device,
                         const ov::AnyMap& properties, const char* out_name)
    : compiled(core.compile_model(model, device, properties)),
      request(compiled.create_infer_request()),
      inputs(compiled.input("inputs_embeds")),
      out(compiled.output(out_name)) {}

CodePredictor::CodePredictor(ov::Core& core, const std::string& xml, const std::string& device,
                             const ov::AnyMap& properties, EmbeddingTables tables,
                             const std::optional<BatchedVariant>& batched, bool native_matmuls)
    : tables_(std::move(tables)),
      hidden_size_(tables_.at(0).dim),
      codebook_size_(tables_.at(0).rows),
      head_index_(ov::element::i64, ov::Shape{}) {
    std::shared_ptr<ov::Model> body = core.read_model(xml);
    const char* out_name = "logits";
    if (auto split = split_predictor_heads(body); split && split->heads.size() == tables_.size()) {
        body = split->body;
        out_name = "hidden";
        // The heads compute as the gathered head did, on decompressed weights: without this the plugin would
        // quantise their activations to int8 on the fly (it does so only for constant compressed weights), moving
        // the logits by ~1% and the codes with them. At one row per call the cost is the same (measured).
        ov::AnyMap head_properties = properties;
        head_properties[ov::hint::dynamic_quantization_group_size.name()] = uint64_t{0};
        for (const auto& head : split->heads) {
            // On the kernel too where the body is, with the activations left f32 (exact_matmul): at 8 rows the
            // plugin's decompressing product took ~8 ms a frame for the 15 heads.
            if (native_matmuls) native_matmuls_ += use_native_matmuls(head, /*exact_activations=*/true);
            head_weights_.push_back(lone_product(head));
        }
        // A head that is one product on the kernel runs without an infer of its own: an infer of a one-op model
        // cost ~0.1 ms of the plugin's bookkeeping, 15 times a frame (docs/experiments.md).
        const bool direct = std::all_of(head_weights_.begin(), head_weights_.end(), [this](const auto& w) {
            return w && w->n == codebook_size_;
        });
        if (!direct) head_weights_.clear();
        for (const auto& head : split->heads) {
            if (direct) break;
            heads_.push_back(core.compile_model(head, device, head_properties));
            check_logits(heads_.back(), codebook_size_);
            head_requests_.push_back(heads_.back().create_infer_request());
        }
    }
    // The body's activations are quantised (vnni_matmul); the heads' were not (above).
    if (native_matmuls) native_matmuls_ += use_native_matmuls(body);
    // CHORUS_PREDICTOR_BODY=plugin keeps the plugin's body, to compare the two (tests, benchmarks).
    const char* body_choice = std::getenv("CHORUS_PREDICTOR_BODY");
    if (native_matmuls && !head_weights_.empty() && !(body_choice && std::string_view(body_choice) == "plugin")) {
        auto weights = predictor_body_weights(body);
        const bool heads_fit = weights && std::all_of(head_weights_.begin(), head_weights_.end(), [&](const auto& w) {
            return w->k == weights->hidden;
        });
        if (heads_fit) native_body_.emplace(std::move(*weights));
    }
    if (native_body_) return;  // the plugin's body is not compiled at all
    bodies_.reserve(2);
    bodies_.emplace_back(core, body, device, properties, out_name);
    if (!split_heads()) check_logits(bodies_.front().compiled, codebook_size_);
    if (batched) {
        bodies_.emplace_back(core, body, device, batched->properties, out_name);
        batched_from_ = batched->from_batch;
    }
    for (Body& b : bodies_) {
        if (!split_heads()) b.request.set_tensor("head_index", head_index_);
    }
    active_ = &bodies_.front();
}

const float* CodePredictor::infer_logits(std::size_t head) {
    if (!split_heads()) {
        head_index_.data<int64_t>()[0] = static_cast<int64_t>(head);
        active_->request.infer();
        return active_->request.get_tensor(active_->out).data<const float>();
    }
    active_->request.infer();
    if (!head_weights_.empty()) {
        const ov::Tensor hidden = active_->request.get_tensor(active_->out);
        const std::size_t rows = hidden.get_size() / head_weights_[head]->k;  // the predictor's own width
        logits_.resize(rows * codebook_size_);
        exact_matmul(*head_weights_[head], hidden.data<const float>(), rows, logits_.data());
        return logits_.data();
    }
    // The body's output tensor can be reallocated when the batch changes: hand the current one over every call.
    ov::InferRequest& head_request = head_requests_[head];
    head_request.set_input_tensor(active_->request.get_tensor(active_->out));
    head_request.infer();
    return head_request.get_output_tensor().data<const float>();
}

std::vector<KernelInfo> CodePredictor::kernels() const {
    // The native body's small parts are f32 loops in AVX2 (body_math.hpp) on every CPU; its products, our kernel.
    auto kernels = native_body_ ? std::vector<KernelInfo>{{"PredictorBody", "chorus_predictor_body_avx2", "f32"},
                                                          native_matmul_kernel(/*exact_activations=*/false)}
                                : executed_kernels(bodies_.front().compiled);
    if (!head_weights_.empty()) kernels.push_back(native_matmul_kernel(/*exact_activations=*/true));
    if (!heads_.empty()) {
        const auto head = executed_kernels(heads_.front());  // every head compiles alike
        kernels.insert(kernels.end(), head.begin(), head.end());
    }
    return kernels;
}

const float* CodePredictor::native_logits(std::size_t head, std::size_t batch, std::size_t rows) {
    hidden_.resize(batch * native_body_->hidden_size());
    native_body_->run(inputs_.data(), rows, hidden_.data());
    logits_.resize(batch * codebook_size_);
    exact_matmul(*head_weights_[head], hidden_.data(), batch, logits_.data());
    return logits_.data();
}

void CodePredictor::update_views(std::size_t batch) {
    if (batch == view_batch_ && inputs_.data() == view_data_) return;
    first_view_ = ov::Tensor(ov::element::f32, {batch, 2, hidden_size_}, inputs_.data());
    next_view_ = ov::Tensor(ov::element::f32, {batch, 1, hidden_size_}, inputs_.data());
    view_batch_ = batch;
    view_data_ = inputs_.data();
}

void CodePredictor::predict(const std::vector<PredictorRow>& rows, int32_t* codes, float* embedding_sum) {
    const std::size_t batch = rows.size();
    const std::size_t H = hidden_size_;
    const std::size_t groups = tables_.size();
    inputs_.resize(batch * 2 * H);
    if (!native_body_) update_views(batch);  // the plugin's input tensors
    scratch_.resize(codebook_size_);
    for (std::size_t b = 0; b < batch; ++b) {
        std::copy_n(rows[b].talker_hidden, H, inputs_.data() + (2 * b) * H);
        std::copy_n(rows[b].c0_embedding, H, inputs_.data() + (2 * b + 1) * H);
    }
    std::fill_n(embedding_sum, batch * H, 0.0f);

    if (native_body_) {
        native_body_->reset(batch, groups + 1);
    } else {
        active_ = &bodies_[batched_from_ != 0 && batch >= batched_from_ ? 1 : 0];
        active_->request.reset_state();
    }
    for (std::size_t j = 0; j < groups; ++j) {
        // Infers 1.. all read next_view_, rewritten in place below: it is set once, at the first of them.
        if (j <= 1 && !native_body_) active_->request.set_tensor(active_->inputs, j == 0 ? first_view_ : next_view_);
        const float* logits = native_body_ ? native_logits(j, batch, j == 0 ? 2 : 1) : infer_logits(j);
        // The next input (one row per entry) overwrites the start of inputs_, which the infer no longer needs.
        for (std::size_t b = 0; b < batch; ++b) {
            std::copy_n(logits + b * codebook_size_, codebook_size_, scratch_.data());
            const double u = counter_uniform(rows[b].seed, rows[b].frame_index, static_cast<int32_t>(j + 1));
            const int32_t code = chooser_.choose(scratch_, rows[b].params, u);
            codes[b * groups + j] = code;
            const float* embedding = tables_[j].row(static_cast<std::size_t>(code));
            std::copy_n(embedding, H, inputs_.data() + b * H);
            float* sum = embedding_sum + b * H;
            for (std::size_t i = 0; i < H; ++i) sum[i] += embedding[i];
        }
    }
}
