#pragma once
// Read-only views of the embedding tables the runner looks codes up in. The owning arrays live on the Python
// side (kept alive by the bindings), so a 1.7B model's ~250 MB of code predictor tables is not copied.
#include <cstddef>
#include <vector>

struct EmbeddingTable {
    const float* data;
    std::size_t rows;
    std::size_t dim;

    const float* row(std::size_t index) const { return data + index * dim; }
};

// One table per code predictor codebook: tables[j] embeds code j+1 of a frame.
using EmbeddingTables = std::vector<EmbeddingTable>;
