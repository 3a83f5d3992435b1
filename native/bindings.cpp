// Python bindings of the native runner: `wyoming_chorus._native.Runner`. The boundary is paths, numpy buffers and
// numbers only (OpenVINO's own Python objects are never passed across: their ABI ties to one binding build).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "runner.hpp"

namespace nb = nanobind;

namespace {

// C-contiguous CPU arrays; nanobind converts other dtypes / orders (e.g. float64 or a slice) on the way in.
template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

template <class T>
void expect_ndim(const In<T>& array, std::size_t ndim, const char* name) {
    if (array.ndim() != ndim) {
        throw std::invalid_argument(std::string(name) + " must have " + std::to_string(ndim) + " dimension(s), got " +
                                    std::to_string(array.ndim()));
    }
}

template <class T>
std::span<const T> vector_of(const In<T>& array, const char* name) {
    expect_ndim(array, 1, name);
    return {array.data(), array.shape(0)};
}

template <class T>
Matrix<T> matrix_of(const In<T>& array, const char* name) {
    expect_ndim(array, 2, name);
    return {{array.data(), array.size()}, array.shape(0), array.shape(1)};
}

template <class T>
nb::object to_numpy(std::vector<T>&& values, std::initializer_list<std::size_t> shape) {
    auto* owned = new std::vector<T>(std::move(values));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
    return nb::cast(nb::ndarray<nb::numpy, T>(owned->data(), shape, owner));
}

// Keeps the embedding arrays alive for as long as the runner reads them in place.
class PyRunner {
public:
    PyRunner(const std::string& talker_xml, const std::string& code_predictor_xml, In<float> codec_embedding,
             In<float> cp_codec_embedding, const std::string& device, const std::string& kv_precision,
             const std::string& inference_precision, std::size_t num_blocks, std::size_t kv_cache_bytes,
             int32_t eos_id, int32_t suppress_from)
        : codec_embedding_(std::move(codec_embedding)),
          cp_codec_embedding_(std::move(cp_codec_embedding)),
          runner_(RunnerOptions{talker_xml, code_predictor_xml, codec_table(), cp_tables(), device, kv_precision,
                                inference_precision, num_blocks, kv_cache_bytes, eos_id, suppress_from}) {}

    Runner& runner() { return runner_; }

private:
    EmbeddingTable codec_table() const {
        expect_ndim(codec_embedding_, 2, "codec_embedding");
        return {codec_embedding_.data(), codec_embedding_.shape(0), codec_embedding_.shape(1)};
    }

    EmbeddingTables cp_tables() const {
        expect_ndim(cp_codec_embedding_, 3, "cp_codec_embedding");
        const std::size_t rows = cp_codec_embedding_.shape(1);
        const std::size_t dim = cp_codec_embedding_.shape(2);
        EmbeddingTables tables;
        for (std::size_t j = 0; j < cp_codec_embedding_.shape(0); ++j) {
            tables.push_back({cp_codec_embedding_.data() + j * rows * dim, rows, dim});
        }
        return tables;
    }

    In<float> codec_embedding_;
    In<float> cp_codec_embedding_;
    Runner runner_;
};

nb::tuple step(PyRunner& self, In<float> embeds, In<int32_t> new_lens, In<int32_t> past_lens, In<int32_t> block_table,
               In<int32_t> block_table_begins, In<uint8_t> emit, In<float> text_next, In<int32_t> frame_index,
               In<uint64_t> seeds, In<float> temperature, In<int32_t> top_k, In<float> top_p, In<float> rep_penalty,
               In<float> sub_temperature, In<int32_t> sub_top_k, In<float> sub_top_p, In<int32_t> history,
               In<int32_t> history_begins, int64_t min_new_tokens, bool want_logits) {
    // Designated initialisers name the member each array lands in, so a mix-up of two same-typed spans (top_k and
    // sub_top_k, say) shows at the call rather than compiling silently; they must follow StepInput's member order.
    const StepInput in{
        .embeds = matrix_of(embeds, "embeds"),
        .new_lens = vector_of(new_lens, "new_lens"),
        .past_lens = vector_of(past_lens, "past_lens"),
        .block_table = vector_of(block_table, "block_table"),
        .block_table_begins = vector_of(block_table_begins, "block_table_begins"),
        .emit = vector_of(emit, "emit"),
        .text_next = matrix_of(text_next, "text_next"),
        .frame_index = vector_of(frame_index, "frame_index"),
        .seeds = vector_of(seeds, "seeds"),
        .temperature = vector_of(temperature, "temperature"),
        .top_k = vector_of(top_k, "top_k"),
        .top_p = vector_of(top_p, "top_p"),
        .rep_penalty = vector_of(rep_penalty, "rep_penalty"),
        .sub_temperature = vector_of(sub_temperature, "sub_temperature"),
        .sub_top_k = vector_of(sub_top_k, "sub_top_k"),
        .sub_top_p = vector_of(sub_top_p, "sub_top_p"),
        .history = vector_of(history, "history"),
        .history_begins = vector_of(history_begins, "history_begins"),
        .min_new_tokens = min_new_tokens,
        .want_logits = want_logits,
    };
    StepOutput out;
    {
        // The arguments above hold their (possibly converted) buffers until this function returns.
        nb::gil_scoped_release release;
        out = self.runner().step(in);
    }
    Runner& runner = self.runner();
    const std::size_t entries = in.entries();
    nb::object logits = nb::none();
    if (want_logits) logits = to_numpy(std::move(out.logits), {entries, out.logits.size() / entries});
    return nb::make_tuple(to_numpy(std::move(out.codes), {entries, runner.num_code_groups()}),
                          to_numpy(std::move(out.is_eos), {entries}),
                          to_numpy(std::move(out.next_embeds), {entries, runner.hidden_size()}), logits);
}

}  // namespace

NB_MODULE(_native, m) {
    m.doc() = "Paged-KV Qwen3-TTS runner on OpenVINO (see native/runner.hpp).";
    nb::class_<PyRunner>(m, "Runner")
        .def(nb::init<const std::string&, const std::string&, In<float>, In<float>, const std::string&,
                      const std::string&, const std::string&, std::size_t, std::size_t, int32_t, int32_t>(),
             nb::arg("talker_xml"), nb::arg("code_predictor_xml"), nb::arg("codec_embedding"),
             nb::arg("cp_codec_embedding"), nb::arg("device"), nb::arg("kv_precision"), nb::arg("inference_precision"),
             nb::arg("num_blocks"), nb::arg("kv_cache_bytes"), nb::arg("eos_id"), nb::arg("suppress_from"))
        .def("step", &step, nb::arg("embeds"), nb::arg("new_lens"), nb::arg("past_lens"), nb::arg("block_table"),
             nb::arg("block_table_begins"), nb::arg("emit"), nb::arg("text_next"), nb::arg("frame_index"),
             nb::arg("seeds"), nb::arg("temperature"), nb::arg("top_k"), nb::arg("top_p"), nb::arg("rep_penalty"),
             nb::arg("sub_temperature"), nb::arg("sub_top_k"), nb::arg("sub_top_p"), nb::arg("history"),
             nb::arg("history_begins"), nb::arg("min_new_tokens"), nb::arg("want_logits"),
             "One model step for every scheduled entry; returns (codes, is_eos, next_embeds, logits | None).")
        .def_prop_ro("block_size", [](PyRunner& self) { return self.runner().block_size(); })
        .def_prop_ro("num_blocks", [](PyRunner& self) { return self.runner().num_blocks(); })
        .def_prop_ro("bytes_per_block", [](PyRunner& self) { return self.runner().bytes_per_block(); })
        .def_prop_ro("hidden_size", [](PyRunner& self) { return self.runner().hidden_size(); })
        .def_prop_ro("device", [](PyRunner& self) { return self.runner().device(); })
        .def_prop_ro("kv_precision", [](PyRunner& self) { return self.runner().kv_precision(); });
}
