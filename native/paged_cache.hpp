#pragma once
// The paged KV cache: one tensor per key_cache.i / value_cache.i input of the compiled talker, allocated once
// (and, on the host, made resident at once) and bound to the infer request for good. The PagedAttention kernel
// writes new K/V into them in place; which physical block belongs to whom is decided by the caller's block tables.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <openvino/runtime/compiled_model.hpp>
#include <openvino/runtime/infer_request.hpp>

class PagedCache {
public:
    // num_blocks == 0 means: as many blocks as fit in cache_bytes.
    PagedCache(ov::CompiledModel& compiled, const std::string& device, std::size_t num_blocks,
               std::size_t cache_bytes);

    void bind(ov::InferRequest& request) const;

    std::size_t block_size() const { return block_size_; }
    std::size_t num_blocks() const { return num_blocks_; }
    // Over all layers, keys and values together (quantisation scales included).
    std::size_t bytes_per_block() const { return bytes_per_block_; }
    ov::element::Type element_type() const { return element_type_; }

private:
    std::vector<std::pair<std::string, ov::Tensor>> tensors_;
    std::size_t block_size_ = 0;
    std::size_t num_blocks_ = 0;
    std::size_t bytes_per_block_ = 0;
    ov::element::Type element_type_;
};
