// Python bindings of the native runner: `wyoming_chorus._native.Runner`. The boundary is paths, numpy buffers and
// numbers only (OpenVINO's own Python objects are never passed across: their ABI ties to one binding build).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "device.hpp"
#include "runner.hpp"
#include "vnni_matmul.hpp"

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
             int32_t eos_id, int32_t suppress_from, std::optional<uint64_t> dynamic_quantization_group_size,
             std::optional<uint64_t> batched_dynamic_quantization_group_size, std::size_t batched_from,
             bool native_matmuls)
        : codec_embedding_(std::move(codec_embedding)),
          cp_codec_embedding_(std::move(cp_codec_embedding)),
          runner_(RunnerOptions{talker_xml, code_predictor_xml, codec_table(), cp_tables(), device, kv_precision,
                                inference_precision, num_blocks, kv_cache_bytes, eos_id, suppress_from,
                                dynamic_quantization_group_size, batched_dynamic_quantization_group_size,
                                batched_from, native_matmuls}) {}

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

// Reads a Python StepBatch (wyoming_chorus/engine/step_batch.py) field by field, by name, into views of its arrays.
// Nothing is converted: a field of another dtype or layout is a ValueError naming it. Each array read is kept here, so
// its buffer outlives the step even if the attribute is computed.
class BatchReader {
public:
    explicit BatchReader(nb::handle batch) : batch_(batch) {}

    template <class T>
    std::span<const T> vector(const char* name) { return vector_of(array<T>(name), name); }

    template <class T>
    Matrix<T> matrix(const char* name) { return matrix_of(array<T>(name), name); }

    template <class T>
    T scalar(const char* name) { return nb::cast<T>(nb::getattr(batch_, name)); }

private:
    template <class T>
    In<T> array(const char* name) {
        nb::object value = nb::getattr(batch_, name);
        In<T> view;
        if (!nb::try_cast(value, view, /*convert=*/false)) {
            throw std::invalid_argument(std::string("Runner.step: StepBatch.") + name +
                                        " must be a C-contiguous numpy array of the dtype step_batch.py gives it");
        }
        kept_.push_back(std::move(value));
        return view;
    }

    nb::handle batch_;
    std::vector<nb::object> kept_;
};

nb::tuple step(PyRunner& self, nb::handle batch) {
    BatchReader read(batch);
    // Designated initialisers name the member each field lands in; they follow StepBatch's member order.
    const StepBatch in{
        .embeds = read.matrix<float>("embeds"),
        .new_lens = read.vector<int32_t>("new_lens"),
        .past_lens = read.vector<int32_t>("past_lens"),
        .block_table = read.vector<int32_t>("block_table"),
        .block_table_begins = read.vector<int32_t>("block_table_begins"),
        .emit = read.vector<uint8_t>("emit"),
        .text_next = read.matrix<float>("text_next"),
        .frame_index = read.vector<int32_t>("frame_index"),
        .seeds = read.vector<uint64_t>("seeds"),
        .temperature = read.vector<float>("temperature"),
        .top_k = read.vector<int32_t>("top_k"),
        .top_p = read.vector<float>("top_p"),
        .rep_penalty = read.vector<float>("rep_penalty"),
        .sub_temperature = read.vector<float>("sub_temperature"),
        .sub_top_k = read.vector<int32_t>("sub_top_k"),
        .sub_top_p = read.vector<float>("sub_top_p"),
        .history = read.vector<int32_t>("history"),
        .history_begins = read.vector<int32_t>("history_begins"),
        .min_new_tokens = read.scalar<int64_t>("min_new_tokens"),
        .want_logits = read.scalar<bool>("want_logits"),
    };
    const bool want_logits = in.want_logits;
    StepOutput out;
    {
        // `read` holds the batch's arrays until this function returns.
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

nb::list kernels(PyRunner& self) {
    nb::list out;
    Runner& runner = self.runner();
    for (const auto& [graph, kernels] : {std::pair{"talker", runner.talker_kernels()},
                                         std::pair{"code_predictor", runner.predictor_kernels()}}) {
        for (const KernelInfo& k : kernels) out.append(nb::make_tuple(graph, k.layer_type, k.primitive, k.precision));
    }
    return out;
}

// The compressed-weight kernel alone on given weights (the build matmul_isa() picks), for tests against a reference
// of its arithmetic: q [n, k] (u8 codes with
// zero [n] for "int8"; -8..7 for "int4", zero unused), scale [n] or [n, k / group], x [rows, k] -> y [rows, n].
nb::object vnni_matmul_of(const std::string& kind, In<int32_t> q, In<float> scale, In<float> zero, In<float> x,
                          std::size_t group) {
    expect_ndim(q, 2, "q");
    expect_ndim(x, 2, "x");
    const std::size_t n = q.shape(0), k = q.shape(1), rows = x.shape(0);
    if (x.shape(1) != k) throw std::invalid_argument("x and q disagree on k");
    std::vector<float> scales(scale.data(), scale.data() + scale.size());
    PackedWeights packed;
    const bool exact = kind == "int8_f32";  // the same INT8 weights, activations left f32 (exact_matmul)
    if (kind == "int8" || exact) {
        if (scale.size() != n || zero.size() != n) throw std::invalid_argument("int8 takes scale [n] and zero [n]");
        std::vector<uint8_t> codes(n * k);
        for (std::size_t i = 0; i < n * k; ++i) {
            if (q.data()[i] < 0 || q.data()[i] > 255) throw std::invalid_argument("int8 codes are 0..255");
            codes[i] = static_cast<uint8_t>(q.data()[i]);
        }
        packed = pack_int8_asym(codes.data(), scales.data(), zero.data(), n, k, group);
    } else if (kind == "int4") {
        if (group == 0 || k % group != 0 || scale.size() != n * (k / group)) {
            throw std::invalid_argument("int4 takes scale [n, k / group]");
        }
        std::vector<int8_t> codes(q.data(), q.data() + n * k);
        packed = pack_int4_sym(codes.data(), scales.data(), n, k, group);
    } else {
        throw std::invalid_argument("kind is int8, int8_f32 or int4, got " + kind);
    }
    std::vector<float> y(rows * n);
    {
        nb::gil_scoped_release release;
        if (exact) {
            exact_matmul(packed, x.data(), rows, y.data());
        } else {
            vnni_matmul(packed, x.data(), rows, y.data());
        }
    }
    return to_numpy(std::move(y), {rows, n});
}

}  // namespace

NB_MODULE(_native, m) {
    m.doc() = "Paged-KV Qwen3-TTS runner on OpenVINO (see native/runner.hpp).";
    nb::class_<PyRunner>(m, "Runner")
        .def(nb::init<const std::string&, const std::string&, In<float>, In<float>, const std::string&,
                      const std::string&, const std::string&, std::size_t, std::size_t, int32_t, int32_t,
                      std::optional<uint64_t>, std::optional<uint64_t>, std::size_t, bool>(),
             nb::arg("talker_xml"), nb::arg("code_predictor_xml"), nb::arg("codec_embedding"),
             nb::arg("cp_codec_embedding"), nb::arg("device"), nb::arg("kv_precision"), nb::arg("inference_precision"),
             nb::arg("num_blocks"), nb::arg("kv_cache_bytes"), nb::arg("eos_id"), nb::arg("suppress_from"),
             nb::arg("dynamic_quantization_group_size").none() = nb::none(),
             nb::arg("batched_dynamic_quantization_group_size").none() = nb::none(), nb::arg("batched_from") = 0,
             nb::arg("native_matmuls") = false)
        .def("step", &step, nb::arg("batch"),
             "One model step for every entry of a StepBatch; returns (codes, is_eos, next_embeds, logits | None).")
        .def_prop_ro("block_size", [](PyRunner& self) { return self.runner().block_size(); })
        .def_prop_ro("num_blocks", [](PyRunner& self) { return self.runner().num_blocks(); })
        .def_prop_ro("bytes_per_block", [](PyRunner& self) { return self.runner().bytes_per_block(); })
        .def_prop_ro("hidden_size", [](PyRunner& self) { return self.runner().hidden_size(); })
        .def_prop_ro("device", [](PyRunner& self) { return self.runner().device(); })
        .def_prop_ro("kv_precision", [](PyRunner& self) { return self.runner().kv_precision(); })
        .def_prop_ro("predictor_heads_split",
                     [](PyRunner& self) { return self.runner().predictor_heads_split(); },
                     "True when the code predictor's output heads run as models of their own (predictor_heads.hpp).")
        .def_prop_ro("dynamic_quantization_group_size",
                     [](PyRunner& self) { return self.runner().dynamic_quantization_group_size(); },
                     "The talker's DYNAMIC_QUANTIZATION_GROUP_SIZE as compiled (0: activations not quantised).")
        .def_prop_ro("native_matmuls", [](PyRunner& self) { return self.runner().native_matmuls(); },
                     "(talker, code predictor): how many compressed-weight MatMuls run on the project's own "
                     "kernel (native/compressed_matmul.hpp); (0, 0) where the CPU or the precision does not allow it.")
        .def("kernels", &kernels,
             "(graph, layer type, kernel, precision) of every op the plugin runs, after at least one step.");
    m.def("vnni_matmul", &vnni_matmul_of, nb::arg("kind"), nb::arg("q"), nb::arg("scale"), nb::arg("zero"),
          nb::arg("x"), nb::arg("group"),
          "The compressed-weight kernel alone (native/vnni_matmul.hpp), for tests: y [rows, n] = x · Wᵀ.");
    m.def("native_matmul_available", &native_matmul_available,
          "Whether this CPU runs the project's compressed-weight kernel (AVX-512 VNNI, AVX-VNNI or AVX2, by "
          "CPUID).");
    m.def("matmul_isa", &matmul_isa_name,
          "Which build of that kernel runs here: \"avx512\" (VNNI), \"avxvnni\", \"avx2\" (each also where "
          "CHORUS_MATMUL_ISA asks for it) or \"\".");
    m.def("cpu_isa", &cpu_isa,
          "The most telling ISA extension CPUID reports (amx_bf16, avx512_bf16, avx512f, avx2 or \"\"): what the "
          "plugin's kernels dispatch on, also under an emulator.");
}
