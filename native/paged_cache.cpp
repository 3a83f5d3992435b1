#include "paged_cache.hpp"

#include <cstring>
#include <stdexcept>

namespace {

struct CacheInput {
    std::string name;
    ov::element::Type type;
    ov::Shape per_block;  // the shape of one block: the compiled input's shape without its leading dimension
};

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::vector<CacheInput> cache_inputs(const ov::CompiledModel& compiled) {
    std::vector<CacheInput> inputs;
    for (const auto& input : compiled.inputs()) {
        const std::string& name = input.get_any_name();
        if (!starts_with(name, "key_cache.") && !starts_with(name, "value_cache.")) {
            continue;
        }
        const ov::PartialShape& shape = input.get_partial_shape();
        if (shape.rank().is_dynamic() || shape.size() < 2) {
            throw std::runtime_error("cache input " + name + " has no per-block shape after compilation");
        }
        ov::Shape per_block;
        for (std::size_t axis = 1; axis < shape.size(); ++axis) {
            if (shape[axis].is_dynamic()) {
                throw std::runtime_error("cache input " + name + " has a dynamic per-block dimension");
            }
            per_block.push_back(static_cast<std::size_t>(shape[axis].get_length()));
        }
        inputs.push_back({name, input.get_element_type(), per_block});
    }
    if (inputs.empty()) {
        throw std::runtime_error("the paged talker has no key_cache / value_cache inputs");
    }
    return inputs;
}

std::size_t block_bytes(const CacheInput& input) {
    return ov::shape_size(input.per_block) * input.type.bitwidth() / 8;
}

}  // namespace

PagedCache::PagedCache(ov::CompiledModel& compiled, const std::string& device, std::size_t num_blocks,
                       std::size_t cache_bytes) {
    const auto inputs = cache_inputs(compiled);
    for (const auto& input : inputs) {
        bytes_per_block_ += block_bytes(input);
        // Values are [heads, block_size, head_dim (+ per-token scales)] on CPU and GPU alike; keys may carry
        // extra rows of per-channel quantisation parameters, so the block size is read from a value cache.
        if (starts_with(input.name, "value_cache.")) {
            const std::size_t tokens = input.per_block.size() >= 2 ? input.per_block[1] : 0;
            if (block_size_ != 0 && tokens != block_size_) {
                throw std::runtime_error("value cache inputs disagree on the block size");
            }
            block_size_ = tokens;
        }
        if (starts_with(input.name, "key_cache.")) {
            element_type_ = input.type;
        }
    }
    if (block_size_ == 0) {
        throw std::runtime_error("could not read the block size from the value cache inputs");
    }

    num_blocks_ = num_blocks != 0 ? num_blocks : cache_bytes / bytes_per_block_;
    if (num_blocks_ == 0) {
        throw std::invalid_argument("kv_cache_bytes (" + std::to_string(cache_bytes) +
                                    ") is smaller than one block (" + std::to_string(bytes_per_block_) +
                                    " bytes); give num_blocks or a larger kv_cache_bytes");
    }

    // On GPU the cache must live in device memory: a host tensor would be copied in (and the kernel's writes
    // lost) on every infer.
    const bool remote = device.rfind("GPU", 0) == 0;
    for (const auto& input : inputs) {
        ov::Shape shape{num_blocks_};
        shape.insert(shape.end(), input.per_block.begin(), input.per_block.end());
        ov::Tensor tensor = remote ? compiled.get_context().create_tensor(input.type, shape)
                                   : ov::Tensor(input.type, shape);
        // A host tensor's pages are committed only when first written, and the block manager hands out every
        // block in turn: resident memory would creep up by a block's worth per request until the whole pool had
        // been used once (~11 KB a request on the tiny model, for ~24,000 requests). Written once here, the pool
        // is resident from the start: the memory the KV budget names is taken at load (a budget the machine
        // cannot hold fails then, not hours into serving), RSS stays flat under load, and no step page-faults.
        if (!remote) std::memset(tensor.data(), 0, tensor.get_byte_size());
        tensors_.emplace_back(input.name, std::move(tensor));
    }
}

void PagedCache::bind(ov::InferRequest& request) const {
    for (const auto& [name, tensor] : tensors_) {
        request.set_tensor(name, tensor);
    }
}
