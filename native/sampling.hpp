#pragma once
// Choosing one code from a row of logits, the way Hugging Face generate() does (repetition penalty, min-new-tokens
// eos rule, suppressed ids, then temperature, top-k, top-p and a multinomial draw), with a counter-based random
// source: the draw for (seed, frame, codebook) is a pure function of those three numbers, so recomputing a
// preempted request reproduces the codes it had already produced.
#include <cstdint>
#include <span>
#include <vector>

struct SamplingParams {
    float temperature;  // <= 0: greedy
    int32_t top_k;      // 0: no top-k
    float top_p;        // 1: no top-p
};

// Uniform in [0, 1), fixed by its three arguments.
double counter_uniform(uint64_t seed, int32_t frame_index, int32_t codebook);

// The codec head's rules for codebook 0, applied in place to one row of raw talker logits.
struct CodecHeadRules {
    int32_t eos_id;
    int32_t suppress_from;  // ids >= this are control codes, never sampled except eos
};

class CodebookZeroFilter {
public:
    CodebookZeroFilter(CodecHeadRules rules, std::size_t vocab_size);

    // history: the entry's earlier codebook-0 codes (each penalised once, however often it occurred).
    void apply(std::span<float> logits, bool eos_allowed, std::span<const int32_t> history, float penalty);

private:
    CodecHeadRules rules_;
    std::vector<uint8_t> seen_;  // scratch, all zero between calls
};

// Picks a token from processed logits; `logits` is used as scratch. `u` comes from counter_uniform.
class TokenChooser {
public:
    int32_t choose(std::span<float> logits, const SamplingParams& params, double u);

private:
    struct Candidate {
        int32_t id;
        double weight;
    };
    std::vector<Candidate> candidates_;
};
