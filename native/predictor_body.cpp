#include "predictor_body.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "body_math.hpp"

// The small parts of a Qwen3 decoder layer, as graphs/transformer.py builds them and in the same order of
// operations: RMSNorm x * (1 / sqrt(mean(x²) + eps)) * gain; q and k normed per head, then rotated (rotate_half
// RoPE at the row's position); attention of each query head on its key/value head over the positions so far, scaled
// by 1 / sqrt(head_dim); SiLU(gate) * up. Everything is f32, as the plugin computes a compressed model.
namespace {

void rms_norm(const float* x, const float* gain, std::size_t n, float eps, float* out) {
    const float squares = body_math::sum_of_squares(x, n);
    const float inv = 1.0f / std::sqrt(squares / static_cast<float>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * inv * gain[i];
}

// One head [2 * half] rotated in place: x * cos + rotate_half(x) * sin, with the angles' cos and sin [half].
void rope(float* x, const float* cos, const float* sin, std::size_t half) {
    for (std::size_t i = 0; i < half; ++i) {
        const float a = x[i], b = x[i + half];
        x[i] = a * cos[i] - b * sin[i];
        x[i + half] = b * cos[i] + a * sin[i];
    }
}

}  // namespace

PredictorBody::PredictorBody(PredictorBodyWeights weights) : w_(std::move(weights)) {}

void PredictorBody::reset(std::size_t batch, std::size_t max_positions) {
    batch_ = batch;
    capacity_ = max_positions;
    length_ = 0;
    const std::size_t size = batch * w_.layers.size() * w_.kv_heads * max_positions * w_.head_dim;
    keys_.resize(size);
    values_.resize(size);
    // The angles of every position a frame reaches, position * inv_freq in f32 as graphs/attention.py has them.
    const std::size_t half = w_.inv_freq.size();
    if (cos_.size() < max_positions * half) {
        cos_.resize(max_positions * half);
        sin_.resize(max_positions * half);
        for (std::size_t p = 0; p < max_positions; ++p) {
            for (std::size_t i = 0; i < half; ++i) {
                const float angle = static_cast<float>(p) * w_.inv_freq[i];
                cos_[p * half + i] = std::cos(angle);
                sin_[p * half + i] = std::sin(angle);
            }
        }
    }
}

void PredictorBody::run(const float* x, std::size_t rows, float* hidden) {
    if (length_ + rows > capacity_) throw std::length_error("code predictor: more positions than reset() made room for");
    const std::size_t n = batch_ * rows, H = w_.hidden;
    x_.resize(n * H);
    if (w_.projection) {
        vnni_matmul(*w_.projection, x, n, x_.data());
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t i = 0; i < H; ++i) x_[r * H + i] += w_.projection_bias[i];
    } else {
        std::copy_n(x, n * H, x_.data());
    }
    normed_.resize(n * H);
    out_.resize(n * H);
    const std::size_t I = w_.intermediate;
    gate_up_.resize(n * 2 * I);
    act_.resize(n * I);
    for (std::size_t l = 0; l < w_.layers.size(); ++l) {
        const auto& layer = w_.layers[l];
        for (std::size_t r = 0; r < n; ++r) rms_norm(&x_[r * H], layer.input_norm.data(), H, w_.eps, &normed_[r * H]);
        qkv_.resize(n * layer.qkv->n);
        vnni_matmul(*layer.qkv, normed_.data(), n, qkv_.data());
        attend(l, rows);
        vnni_matmul(*layer.o, attn_.data(), n, out_.data());
        for (std::size_t i = 0; i < n * H; ++i) x_[i] += out_[i];
        for (std::size_t r = 0; r < n; ++r) rms_norm(&x_[r * H], layer.post_norm.data(), H, w_.eps, &normed_[r * H]);
        vnni_matmul(*layer.gate_up, normed_.data(), n, gate_up_.data());
        for (std::size_t r = 0; r < n; ++r) {
            const float* gate = &gate_up_[r * 2 * I];
            body_math::silu_times(gate, gate + I, I, &act_[r * I]);
        }
        vnni_matmul(*layer.down, act_.data(), n, out_.data());
        for (std::size_t i = 0; i < n * H; ++i) x_[i] += out_[i];
    }
    length_ += rows;
    for (std::size_t b = 0; b < batch_; ++b)
        rms_norm(&x_[(b * rows + rows - 1) * H], w_.final_norm.data(), H, w_.eps, hidden + b * H);
}

// qkv_ [batch * rows][(heads + 2 kv_heads) * head_dim] -> attn_ [batch * rows][heads * head_dim]; the rows' keys and
// values join the history first, so each row sees itself and the positions before it.
void PredictorBody::attend(std::size_t layer, std::size_t rows) {
    const auto& w = w_.layers[layer];
    const std::size_t d = w_.head_dim, h = w_.heads, kvh = w_.kv_heads, width = (h + 2 * kvh) * d;
    const std::size_t per_query = h / kvh;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const std::size_t half = d / 2;
    attn_.resize(batch_ * rows * h * d);
    scores_.resize(length_ + rows);
    float* scores = scores_.data();
    for (std::size_t b = 0; b < batch_; ++b) {
        const std::size_t base = (b * w_.layers.size() + layer) * kvh;  // this entry's and layer's first kv head
        for (std::size_t t = 0; t < rows; ++t) {
            float* row = &qkv_[(b * rows + t) * width];
            const std::size_t position = length_ + t;
            for (std::size_t g = 0; g < kvh; ++g) {
                float* key = &keys_[((base + g) * capacity_ + position) * d];
                rms_norm(row + (h + g) * d, w.k_norm.data(), d, w_.eps, key);
                rope(key, &cos_[position * half], &sin_[position * half], half);
                std::copy_n(row + (h + kvh + g) * d, d, &values_[((base + g) * capacity_ + position) * d]);
            }
        }
        for (std::size_t t = 0; t < rows; ++t) {
            float* row = &qkv_[(b * rows + t) * width];
            const std::size_t position = length_ + t, seen = position + 1;
            for (std::size_t q = 0; q < h; ++q) {
                float query[kMaxHeadDim];  // d <= kMaxHeadDim: predictor_body_weights checks it
                rms_norm(row + q * d, w.q_norm.data(), d, w_.eps, query);
                rope(query, &cos_[position * half], &sin_[position * half], half);
                const std::size_t g = q / per_query;
                const float* keys = &keys_[(base + g) * capacity_ * d];
                const float* values = &values_[(base + g) * capacity_ * d];
                float top = -INFINITY;
                for (std::size_t j = 0; j < seen; ++j) {
                    scores[j] = body_math::dot(query, keys + j * d, d) * scale;
                    top = std::max(top, scores[j]);
                }
                float total = 0.0f;
                for (std::size_t j = 0; j < seen; ++j) total += scores[j] = std::exp(scores[j] - top);
                float* out = &attn_[((b * rows + t) * h + q) * d];
                std::fill_n(out, d, 0.0f);
                for (std::size_t j = 0; j < seen; ++j) body_math::add_scaled(scores[j] / total, values + j * d, d, out);
            }
        }
    }
}
