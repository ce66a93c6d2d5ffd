// gradtrace capture core: a gradient's TensorValue: values, stats, and their JSON.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// ------------------------------------------------------------------------- values

using Shape = c10::SmallVector<int64_t, 5>;  // inline: no allocation per shape

// ``Value::kept_dropped`` of a gradient held inside a ``torch.func`` transform (vmap, grad):
// its wrapper has no memory of its own to keep, and the level is gone when the file is written
// (``KEPT_TRANSFORM`` in capture/pycore.py).
constexpr int64_t kKeptTransform = -1;

struct Value {
  Shape shape;
  at::ScalarType dtype = at::kFloat;
  // 1: stats; 2: values and stats; 3: held for Python to encode
  uint8_t kind = 3;
  int64_t numel = 0;
  double mn = 0, mx = 0, mean = 0, norm = 0;
  std::vector<double> data;
  bool f32 = false;  // NOTE [float32 values]
  at::Tensor held;
  std::string py_with, py_without;  // kind 3, once Python has encoded it (canonical JSON)
  // NOTE [kept tensors] in capture/tensorfile.py: the tensor itself for the tensor file (an
  // alias sharing its version counter, or a copy), and the version it was kept at
  at::Tensor kept;
  int64_t kept_version = -1;
  bool kept_copy = false;
  int64_t kept_dropped = 0;  // bytes not held: the keep budget was spent (reason ``budget``);
                             // ``kKeptTransform``: a functorch transform's wrapper (``transform``)

  // NOTE [values move]: ``Shape``'s move is not noexcept, so without these ``Core::values``
  // copied every Value (its ``data`` and tensors) each time it grew: a fifth of ``capture``.
  Value() = default;
  Value(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(const Value&) = default;
  Value& operator=(Value&&) noexcept = default;
};
static_assert(std::is_nothrow_move_constructible_v<Value>);

// Large tensors (only stats are kept): one vectorised pass, several partial sums at once
// (``omp simd``; AVX2 when the CPU has it, chosen when the module loads). A gradient of a
// transformer's activations has 16k elements and there are ~1,000 of them per backward: the
// sequential loop below took 16 ms there, this one ~3.
#define GT_REDUCE_BIG(NAME, T)                                                          \
  __attribute__((target_clones("avx2", "default"))) void NAME(                        \
      const T* p, int64_t n, double* out) {                                             \
    double a = std::numeric_limits<double>::infinity(), b = -a, s = 0, q = 0;           \
    _Pragma("omp simd reduction(min:a) reduction(max:b) reduction(+:s,q)")              \
    for (int64_t i = 0; i < n; ++i) {                                                   \
      double x = static_cast<double>(p[i]);                                             \
      a = x < a ? x : a;                                                                \
      b = x > b ? x : b;                                                                \
      s += x;                                                                           \
      q += x * x;                                                                       \
    }                                                                                   \
    out[0] = a; out[1] = b; out[2] = s; out[3] = q;                                     \
  }
GT_REDUCE_BIG(reduce_big_f, float)
GT_REDUCE_BIG(reduce_big_d, double)

template <typename T>
bool has_nan(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) if (p[i] != p[i]) return true;
  return false;
}

// Small tensors: values kept (unless ``store`` is false: NOTE [stats of a small tensor without
// its values]), stats in row-major order, one rounding per step, exactly as Python computes them
// (NOTE [same stats on both paths] in values.py).
template <typename T>
void reduce(const T* p, int64_t n, Value& v, bool keep, bool store = true) {
  double q = std::numeric_limits<double>::quiet_NaN();
  if (!keep) {
    double r[4];
    if constexpr (std::is_same_v<T, float>) reduce_big_f(p, n, r); else reduce_big_d(p, n, r);
    if (std::isnan(r[2]) && has_nan(p, n)) { v.mn = v.mx = v.mean = v.norm = q; return; }
    v.mn = r[0]; v.mx = r[1]; v.mean = r[2] / static_cast<double>(n); v.norm = std::sqrt(r[3]);
    return;
  }
  bool nan = false;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, sum = 0, sumsq = 0;
  if (store) v.data.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double x = static_cast<double>(p[i]);
    if (store) v.data[static_cast<size_t>(i)] = x;
    if (x != x) { nan = true; continue; }
    if (x < mn) mn = x;
    if (x > mx) mx = x;
    sum += x;
    sumsq += x * x;
  }
  if (nan) {
    v.mn = v.mx = v.mean = v.norm = q;
  } else {
    v.mn = mn; v.mx = mx; v.mean = sum / static_cast<double>(n); v.norm = std::sqrt(sumsq);
  }
}

// A small strided tensor (a transposed weight that a linear layer saves) read in row-major
// order straight from its memory: the same numbers, in the same order, as ``reduce`` over its
// contiguous copy, without the two dispatched ops (``detach``, ``contiguous``) that copy cost.
template <typename T>
void reduce_strided(const T* base, c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t n, Value& v,
                    bool store = true) {
  const size_t dims = sizes.size();
  c10::SmallVector<int64_t, 6> idx(dims, 0);
  bool nan = false;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, sum = 0, sumsq = 0;
  if (store) v.data.resize(static_cast<size_t>(n));
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = static_cast<double>(base[off]);
    if (store) v.data[static_cast<size_t>(i)] = x;
    if (x != x) {
      nan = true;
    } else {
      if (x < mn) mn = x;
      if (x > mx) mx = x;
      sum += x;
      sumsq += x * x;
    }
    for (size_t d = dims; d-- > 0;) {  // the next index in row-major order
      if (++idx[d] < sizes[d]) { off += strides[d]; break; }
      off -= strides[d] * (sizes[d] - 1);
      idx[d] = 0;
    }
  }
  double q = std::numeric_limits<double>::quiet_NaN();
  if (nan) {
    v.mn = v.mx = v.mean = v.norm = q;
  } else {
    v.mn = mn; v.mx = mx; v.mean = sum / static_cast<double>(n); v.norm = std::sqrt(sumsq);
  }
}

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    default: return nullptr;
  }
}

// NOTE [stats of a small tensor without its values]
//     A TensorValue written without values (``write_value(.., false)``: a forward output's, a
//     file's stats) still has a small tensor's stats from the sequential pass, one rounding per
//     step as Python's, not the vectorised one: ``encode(t, false)`` runs that same pass and
//     only skips copying the values into ``Value::data``, which nothing would read (GRU-200's
//     4,000 outputs: a heap block each, made and freed for nothing).

// Encode ``t`` now. What is not a dense, non-empty floating tensor (complex, integer, sparse,
// quantized, meta...) is rare for a gradient: it is held (small ones copied) for Python's
// encoder, which knows every odd case (``gradtrace.capture.values.encode``). ``values`` false:
// only ever written without values (NOTE [stats of a small tensor without its values]).
Value encode(const at::Tensor& t, bool values = true) {
  Value v;
  Unseen unseen(t);  // its copies and moves
  try {
    v.dtype = t.scalar_type();
    if (t.key_set().has(c10::DispatchKey::Python)) {
      // a subclass's ops run its Python code: encoded now by Python's encoder, which runs
      // none of them; neither copied (an op) nor held (autograd could no longer steal it):
      // NOTE [tensor subclasses] in odd_tensors.py
      v.kind = 3;
      py::gil_scoped_acquire gil;
      static py::object* encode_now = new py::object(
          py::module_::import("gradtrace.capture.values").attr("encode_json"));
      py::object obj = py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
      py::tuple both = (*encode_now)(obj);
      v.py_with = both[0].cast<std::string>();
      v.py_without = both[1].cast<std::string>();
      return v;
    }
    v.numel = t.numel();
    bool plain = t.layout() == at::kStrided && !t.is_meta() && !t.is_quantized() &&
                 dtype_name(v.dtype) != nullptr && v.numel > 0;
    if (!plain) {
      v.kind = 3;
      v.held = v.numel <= kValuesLimit ? t.detach().clone() : t.detach();
      return v;
    }
    v.shape.assign(t.sizes().begin(), t.sizes().end());
    v.f32 = v.dtype != at::kDouble;
    bool keep = v.numel <= kValuesLimit;
    const at::Tensor* src = &t;
    at::Tensor c;
    // Stats alone do not depend on the order of the elements: a permuted dense tensor (the
    // transposes of a linear layer's backward) is reduced where it lies, without a copy.
    bool in_place = t.is_contiguous() || (!keep && t.is_non_overlapping_and_dense());
    // a lazily negated view (``_neg_view``, the imaginary part of a conjugate) holds its
    // elements' negations in memory: read as the values it stands for
    if (keep && !in_place && t.is_cpu() && !t.is_neg() && t.has_storage() &&
        (v.dtype == at::kFloat || v.dtype == at::kDouble)) {
      if (v.dtype == at::kFloat) reduce_strided(t.const_data_ptr<float>(), t.sizes(), t.strides(), v.numel, v, values);
      else reduce_strided(t.const_data_ptr<double>(), t.sizes(), t.strides(), v.numel, v, values);
      v.kind = 2;
      return v;
    }
    if (!t.is_cpu() || !in_place || t.is_neg() || v.dtype == at::kHalf || v.dtype == at::kBFloat16) {
      c = t.detach();
      if (!c.is_cpu()) c = c.to(at::kCPU);
      if (c.is_neg()) c = c.resolve_neg();
      if (v.dtype == at::kHalf || v.dtype == at::kBFloat16) c = c.to(at::kDouble);
      c = c.contiguous();
      src = &c;
    }
    if (src->scalar_type() == at::kFloat) reduce(src->const_data_ptr<float>(), v.numel, v, keep, values);
    else reduce(src->const_data_ptr<double>(), v.numel, v, keep, values);
    v.kind = keep ? 2 : 1;
  } catch (const std::exception&) {
    v.kind = 3;
    v.data.clear();
    v.held = t.detach();
  }
  return v;
}

void write_number(std::string& out, const Value& v, double x) {
  if (v.f32) format_float32(out, x); else format_double(out, x);
}

void write_nested(std::string& out, const Value& v, size_t dim, size_t& k) {
  if (dim == v.shape.size()) { write_number(out, v, v.data[k++]); return; }
  out.push_back('[');
  for (int64_t i = 0; i < v.shape[dim]; ++i) {
    if (i) out.push_back(',');
    write_nested(out, v, dim + 1, k);
  }
  out.push_back(']');
}

// A TensorValue's keys, in the order written below (NOTE [the core's keys come from the models]
// in backend/gradtrace/schema/cxx_keys.py).
static_assert(keys::in_order({keys::tensor_value::dtype, keys::tensor_value::shape, keys::tensor_value::stats,
                              keys::tensor_value::values}));
static_assert(keys::in_order({keys::tensor_stats::max, keys::tensor_stats::mean, keys::tensor_stats::min,
                              keys::tensor_stats::norm}));

void write_value(std::string& out, const Value& v, bool with_values) {
  namespace tv = keys::tensor_value;
  namespace ts = keys::tensor_stats;
  if (v.kind == 3) { out += with_values ? v.py_with : v.py_without; return; }
  out += tv::dtype.open;
  out.push_back('"');
  out += dtype_name(v.dtype);
  out.push_back('"');
  out += tv::shape.next;
  out.push_back('[');
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) out.push_back(',');
    format_int(out, v.shape[i]);
  }
  out.push_back(']');
  out += tv::stats.next;
  out += ts::max.open; write_number(out, v, v.mx);
  out += ts::mean.next; write_number(out, v, v.mean);
  out += ts::min.next; write_number(out, v, v.mn);
  out += ts::norm.next; write_number(out, v, v.norm);
  out.push_back('}');
  out += tv::values.next;
  if (v.kind == 2 && with_values) {
    size_t k = 0;
    write_nested(out, v, 0, k);
    out.push_back('}');
  } else {
    out += "null}";
  }
}

}  // namespace gradtrace
