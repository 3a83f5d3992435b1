#include "sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace {

// splitmix64's output function: a bijective 64-bit mixer, so distinct counters give unrelated draws.
uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

constexpr float kMasked = -std::numeric_limits<float>::infinity();

int32_t argmax(std::span<const float> logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

double counter_uniform(uint64_t seed, int32_t frame_index, int32_t codebook) {
    uint64_t key = mix(seed);
    key = mix(key ^ static_cast<uint32_t>(frame_index));
    key = mix(key ^ static_cast<uint32_t>(codebook));
    return static_cast<double>(key >> 11) * 0x1.0p-53;
}

CodebookZeroFilter::CodebookZeroFilter(CodecHeadRules rules, std::size_t vocab_size)
    : rules_(rules), seen_(vocab_size, 0) {}

void CodebookZeroFilter::apply(std::span<float> logits, bool eos_allowed, std::span<const int32_t> history,
                               float penalty) {
    if (penalty != 1.0f) {
        for (const int32_t id : history) {
            if (seen_[id]) continue;
            seen_[id] = 1;
            float& logit = logits[id];
            logit = logit < 0.0f ? logit * penalty : logit / penalty;
        }
        for (const int32_t id : history) seen_[id] = 0;
    }
    for (std::size_t id = rules_.suppress_from; id < logits.size(); ++id) {
        if (static_cast<int32_t>(id) != rules_.eos_id) logits[id] = kMasked;
    }
    if (!eos_allowed) logits[rules_.eos_id] = kMasked;
}

int32_t TokenChooser::choose(std::span<float> logits, const SamplingParams& params, double u) {
    if (params.temperature <= 0.0f) {
        return argmax(logits);
    }
    candidates_.clear();
    for (std::size_t id = 0; id < logits.size(); ++id) {
        if (logits[id] == kMasked) continue;
        logits[id] /= params.temperature;
        candidates_.push_back({static_cast<int32_t>(id), logits[id]});
    }
    if (candidates_.empty()) {
        throw std::runtime_error("every logit of the row is masked or -inf: nothing to sample");
    }
    // Top-k keeps every candidate tied with the k-th largest, as Hugging Face does.
    if (params.top_k > 0 && static_cast<std::size_t>(params.top_k) < candidates_.size()) {
        auto kth = candidates_.begin() + (params.top_k - 1);
        std::nth_element(candidates_.begin(), kth, candidates_.end(),
                         [](const Candidate& a, const Candidate& b) { return a.weight > b.weight; });
        const double threshold = kth->weight;
        std::erase_if(candidates_, [threshold](const Candidate& c) { return c.weight < threshold; });
    }
    double top = -std::numeric_limits<double>::infinity();
    for (const auto& c : candidates_) top = std::max(top, c.weight);
    double total = 0.0;
    for (auto& c : candidates_) {
        c.weight = std::exp(c.weight - top);
        total += c.weight;
    }
    // Top-p drops the least likely candidates while their cumulative share stays <= 1 - top_p (at least one kept).
    if (params.top_p < 1.0f) {
        std::sort(candidates_.begin(), candidates_.end(),
                  [](const Candidate& a, const Candidate& b) { return a.weight < b.weight; });
        const double drop_mass = (1.0 - params.top_p) * total;
        double cumulative = 0.0;
        std::size_t dropped = 0;
        while (dropped + 1 < candidates_.size() && cumulative + candidates_[dropped].weight <= drop_mass) {
            cumulative += candidates_[dropped].weight;
            ++dropped;
        }
        candidates_.erase(candidates_.begin(), candidates_.begin() + dropped);
        total -= cumulative;
    }
    const double target = u * total;
    double cumulative = 0.0;
    for (const auto& c : candidates_) {
        cumulative += c.weight;
        if (cumulative > target) return c.id;
    }
    return candidates_.back().id;
}
