// gradtrace capture core: what must run once per autograd node, in C++.
//
// NOTE [why C++]
//     Issue 3 asks for capture at near-bare speed: a GRUCell unrolled 200 steps (3,200 nodes)
//     within 3x of the bare forward+backward, which leaves ~15 us per node for everything.
//     A Python post hook on every node costs ~5 us just to be called (the engine wraps every
//     gradient in a Python object), before anything is recorded; reading a gradient's values
//     and stats with torch ops from Python costs 5-20 us more; and writing each event as a
//     Python dict and then as JSON costs as much again. Here a hook is a C++ object on the
//     node, it copies small gradients (<= VALUES_LIMIT elements) and reduces large ones in
//     one pass over their memory, and the events are written as canonical JSON directly.
//     Python only sees the events in bulk, after each backward call (``drain``).
//
// NOTE [same bytes as json.dumps]
//     The JSON written here must be byte for byte what ``gradtrace.schema.canonical_json``
//     writes for the same events as Python objects (sorted keys, compact separators, floats as
//     ``repr`` writes them, NaN/inf as strings): document ids are hashes of those bytes, and
//     the web process recomputes them. ``format_double`` writes the shortest round-trip digits
//     (``std::to_chars``) in ``repr``'s layout; tests hold both equal on millions of floats.
//
// NOTE [no retained gradients]
//     Nothing here keeps a gradient alive: holding references to every gradient made the
//     transformer's backward 30% slower (fresh memory for each, no in-place accumulation in
//     the engine's input buffers). A gradient met twice (node A's grad_input is node B's
//     grad_output) is recognised by its TensorImpl address, version and a weak reference
//     (which keeps the address from being reused without keeping the storage alive).

#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/DynamicTypes.h>
#include <c10/core/GradMode.h>
#include <ATen/SequenceNumber.h>
#include <frameobject.h>
#include <c10/util/flat_hash_map.h>
#include <c10/util/SmallVector.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <charconv>
#include <tuple>
#include <typeindex>
#include <string_view>
#include <type_traits>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace py = pybind11;
using torch::autograd::Node;
using torch::autograd::variable_list;

namespace gradtrace {

constexpr int64_t kValuesLimit = 1000;
constexpr int32_t kNone = -1;          // value id of a None gradient
constexpr int32_t kNullLine = INT32_MIN;
// The mangled name of a custom Function's node class (``PyNode``), whose type_info
// libtorch_python does not export: compared by name.
constexpr const char* kPyNode = "N5torch8autograd6PyNodeE";

// ------------------------------------------------------------------------- JSON writing

// ``digits`` (no dot, no trailing zeros but one) times 10^(exp10 - nd + 1), laid out as
// Python's ``repr`` lays out a float (exponent form below 1e-4 and from 1e16).
void format_digits(std::string& out, bool neg, const char* digits, int nd, int exp10) {
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  char tmp[48];
  char* w = tmp;
  if (neg) *w++ = '-';
  if (decpt <= -4 || decpt > 16) {  // d[.ddd]e(+|-)XX
    *w++ = digits[0];
    if (nd > 1) { *w++ = '.'; std::memcpy(w, digits + 1, static_cast<size_t>(nd - 1)); w += nd - 1; }
    *w++ = 'e';
    int ex = decpt - 1;
    *w++ = ex < 0 ? '-' : '+';
    ex = std::abs(ex);
    if (ex < 10) *w++ = '0';
    w = std::to_chars(w, tmp + sizeof tmp, ex).ptr;
  } else if (decpt <= 0) {
    *w++ = '0'; *w++ = '.';
    for (int i = 0; i < -decpt; ++i) *w++ = '0';
    std::memcpy(w, digits, static_cast<size_t>(nd)); w += nd;
  } else if (decpt >= nd) {
    std::memcpy(w, digits, static_cast<size_t>(nd)); w += nd;
    for (int i = nd; i < decpt; ++i) *w++ = '0';
    *w++ = '.'; *w++ = '0';
  } else {
    std::memcpy(w, digits, static_cast<size_t>(decpt)); w += decpt;
    *w++ = '.';
    std::memcpy(w, digits + decpt, static_cast<size_t>(nd - decpt)); w += nd - decpt;
  }
  out.append(tmp, static_cast<size_t>(w - tmp));
}

template <typename F>
void format_shortest(std::string& out, F x) {
  if (std::isnan(x)) { out += "\"nan\""; return; }
  if (std::isinf(x)) { out += x > 0 ? "\"inf\"" : "\"-inf\""; return; }
  if (x == 0) { out += std::signbit(x) ? "-0.0" : "0.0"; return; }
  char buf[40];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const char* p = buf;  // "-d.ddde+XX"
  bool neg = *p == '-';
  if (neg) ++p;
  char digits[24];
  int nd = 0;
  const char* e = p;
  for (; *e != 'e'; ++e) if (*e != '.') digits[nd++] = *e;
  int exp10 = 0;
  std::from_chars(e + 1 + (e[1] == '+'), res.ptr, exp10);
  while (nd > 1 && digits[nd - 1] == '0') --nd;
  format_digits(out, neg, digits, nd, exp10);
}

// A float64 as ``json.dumps`` writes it.
void format_double(std::string& out, double x) { format_shortest(out, x); }

// NOTE [float32 values]: a number of a float32 (or float16/bfloat16) tensor is written with
// the fewest digits that read back as the same float32 (numpy's repr of a float32): what the
// tensor holds, exactly, without the 8-9 digits of noise its float64 expansion adds. Parsed
// as a float64 and written again by ``json.dumps``, it gives the same text (no shorter
// decimal reads back as that float64), so document ids are unaffected.
void format_float32(std::string& out, double x) { format_shortest(out, static_cast<float>(x)); }

void format_int(std::string& out, int64_t x) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, x).ptr - buf));
}

// ------------------------------------------------------------------------- values

using Shape = c10::SmallVector<int64_t, 5>;  // inline: no allocation per shape

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
};

bool readable_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

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

// Small tensors: values kept, stats in row-major order, one rounding per step, exactly as
// Python computes them (NOTE [same stats on both paths] in values.py).
template <typename T>
void reduce(const T* p, int64_t n, Value& v, bool keep) {
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
  v.data.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double x = static_cast<double>(p[i]);
    v.data[static_cast<size_t>(i)] = x;
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

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    default: return nullptr;
  }
}

// Encode ``t`` now. What is not a dense, non-empty floating tensor (complex, integer, sparse,
// quantized, meta...) is rare for a gradient: it is held (small ones copied) for Python's
// encoder, which knows every odd case (``gradtrace.capture.values.encode``).
Value encode(const at::Tensor& t) {
  Value v;
  try {
    v.dtype = t.scalar_type();
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
    if (!t.is_cpu() || !in_place || v.dtype == at::kHalf || v.dtype == at::kBFloat16) {
      c = t.detach();
      if (!c.is_cpu()) c = c.to(at::kCPU);
      if (v.dtype == at::kHalf || v.dtype == at::kBFloat16) c = c.to(at::kDouble);
      c = c.contiguous();
      src = &c;
    }
    if (src->scalar_type() == at::kFloat) reduce(src->const_data_ptr<float>(), v.numel, v, keep);
    else reduce(src->const_data_ptr<double>(), v.numel, v, keep);
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

void write_value(std::string& out, const Value& v, bool with_values) {
  if (v.kind == 3) { out += with_values ? v.py_with : v.py_without; return; }
  out += "{\"dtype\":\"";
  out += dtype_name(v.dtype);
  out += "\",\"shape\":[";
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) out.push_back(',');
    format_int(out, v.shape[i]);
  }
  out += "],\"stats\":{\"max\":"; write_number(out, v, v.mx);
  out += ",\"mean\":"; write_number(out, v, v.mean);
  out += ",\"min\":"; write_number(out, v, v.mn);
  out += ",\"norm\":"; write_number(out, v, v.norm);
  out += "},\"values\":";
  if (v.kind == 2 && with_values) {
    size_t k = 0;
    write_nested(out, v, 0, k);
    out.push_back('}');
  } else {
    out += "null}";
  }
}

// ------------------------------------------------------------------------- dtype names

// ``str(dtype)`` without ``torch.`` (Python's ``dtype_name``), cached per scalar type.
py::str dtype_str(at::ScalarType t) {
  static std::unordered_map<int, py::str>* names = new std::unordered_map<int, py::str>();
  auto it = names->find(static_cast<int>(t));
  if (it != names->end()) return it->second;
  py::object d = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(t)));
  std::string s = py::str(d).cast<std::string>();
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  py::str name(s);
  names->emplace(static_cast<int>(t), name);
  return name;
}

const std::string& dtype_text(at::ScalarType t) {
  static std::unordered_map<int, std::string>* names = new std::unordered_map<int, std::string>();
  auto it = names->find(static_cast<int>(t));
  if (it == names->end()) {
    it = names->emplace(static_cast<int>(t), dtype_str(t).cast<std::string>()).first;
  }
  return it->second;
}

// ``str(device)``, cached ("cpu" for nearly every node).
PyObject* device_str(const c10::Device& device) {
  static std::unordered_map<std::string, PyObject*>* names = new std::unordered_map<std::string, PyObject*>();
  std::string s = device.str();
  auto it = names->find(s);
  if (it == names->end()) {
    it = names->emplace(s, PyUnicode_InternFromString(s.c_str())).first;
  }
  Py_INCREF(it->second);
  return it->second;
}

// ------------------------------------------------------------------------- Python objects

// Interned keys (a dict stores the key's hash with it: no hashing per node) and a setter that
// steals the value's reference. Building ~20 entries per node through pybind11's
// ``d["key"] = value`` decoded and hashed each key anew: 3x slower.
struct Keys {
  PyObject *kind, *id, *name, *line, *module, *shape, *dtype, *device, *grad, *seq, *role,
      *created_in_pass, *value, *grad_history, *cut, *outputs, *saved, *saved_bytes,
      *saved_unread, *bytes, *is_parameter, *is_input, *freed_after_pass, *input_nr, *source,
      *target, *function;
  Keys() {
#define GT_KEY(k) k = PyUnicode_InternFromString(#k)
    GT_KEY(kind); GT_KEY(id); GT_KEY(name); GT_KEY(line); GT_KEY(module); GT_KEY(shape);
    GT_KEY(dtype); GT_KEY(device); GT_KEY(grad); GT_KEY(seq); GT_KEY(role); GT_KEY(created_in_pass);
    GT_KEY(value); GT_KEY(grad_history); GT_KEY(cut); GT_KEY(outputs); GT_KEY(saved);
    GT_KEY(saved_bytes); GT_KEY(saved_unread); GT_KEY(bytes); GT_KEY(is_parameter);
    GT_KEY(is_input); GT_KEY(freed_after_pass); GT_KEY(input_nr); GT_KEY(source); GT_KEY(target);
    GT_KEY(function);
#undef GT_KEY
  }
};

const Keys& interned() {
  static const Keys* k = new Keys();  // never freed: lives as long as the interpreter
  return *k;
}

// d[key] = value, stealing ``value`` (a new reference; NULL means a Python error is set).
inline void put(PyObject* d, PyObject* key, PyObject* value) {
  if (value == nullptr) throw python_error();
  int rc = PyDict_SetItem(d, key, value);
  Py_DECREF(value);
  if (rc < 0) throw python_error();
}

inline PyObject* none() { Py_RETURN_NONE; }

PyObject* id_str(int64_t index) {
  char buf[24];
  buf[0] = 'n';
  char* end = std::to_chars(buf + 1, buf + sizeof buf, index).ptr;
  return PyUnicode_FromStringAndSize(buf, end - buf);
}

PyObject* int_list(c10::IntArrayRef xs) {
  PyObject* l = PyList_New(static_cast<Py_ssize_t>(xs.size()));
  if (l == nullptr) throw python_error();
  for (size_t i = 0; i < xs.size(); ++i) PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(xs[i]));
  return l;
}

// ------------------------------------------------------------------------- node entries

// NOTE [node entries in C++]
//     A function node's document entry is a C++ struct, written as canonical JSON at the end
//     (``nodes_json``, ``edges_json``) like the events, never a Python dict: building ~25
//     Python objects per node (entry, outputs, saved tensors, edges, tuples) in the walk and
//     having orjson write them out again was half of a GRU-200's capture overhead. Python
//     keeps a ``None`` per such node in ``rec.nodes`` (ids stay positional) and, in
//     ``rec.edges``, a ``range`` of node indices where their edges go. A diagnosis (the error
//     path) reads entries back as dicts (``infos``).

struct OutMeta {
  bool known = false;
  Shape shape;
  at::ScalarType dtype = at::kFloat;
  c10::Device device = c10::Device(c10::kCPU);
};

struct SavedEntry {
  std::string name;
  Shape shape;
  at::ScalarType dtype = at::kFloat;
  int64_t bytes = 0;
  bool is_param = false, is_input = false, has_ptr = false;
  int32_t freed_after = -1;
  uintptr_t ptr = 0;  // storage address: to match an in-place change (never written)
  py::object param;   // the parameter, or None: to count it once (never written)
};

struct FnEntry {
  int64_t index = 0;
  c10::intrusive_ptr<Node> node;
  const std::string* name = nullptr;  // interned by the recorder (``name_of``)
  uint64_t seqnr = 0;
  bool acc = false;
  int32_t line = kNullLine;
  py::object module;  // str or None
  int64_t seq = 0;
  int32_t created_in_pass = -1;
  c10::SmallVector<OutMeta, 1> outs;
  bool saved_unread = false;
  std::vector<SavedEntry> saved;
  int64_t saved_bytes = 0;
  c10::SmallVector<std::pair<int64_t, int64_t>, 4> edges;  // (input_nr, source node index)
};

// A string as ``json.dumps(ensure_ascii=False)`` writes it (UTF-8 passes through).
void write_str(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (ch < 0x20) {
          static const char hex[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(hex[ch >> 4]);
          out.push_back(hex[ch & 15]);
        } else {
          out.push_back(static_cast<char>(ch));
        }
    }
  }
  out.push_back('"');
}

void write_ints(std::string& out, c10::ArrayRef<int64_t> xs) {
  out.push_back('[');
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) out.push_back(',');
    format_int(out, xs[i]);
  }
  out.push_back(']');
}

void write_id(std::string& out, int64_t index) {
  out += "\"n";
  format_int(out, index);
  out.push_back('"');
}

void write_pystr(std::string& out, const py::object& s) {
  if (s.is_none()) { out += "null"; return; }
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
  if (p == nullptr) throw python_error();
  write_str(out, std::string_view(p, static_cast<size_t>(n)));
}

// ``{"device":..,"dtype":..,"shape":..`` of one forward output (no closing brace).
void write_meta(std::string& out, const OutMeta* o) {
  if (o == nullptr || !o->known) {
    out += "\"device\":null,\"dtype\":null";
    return;
  }
  out += "\"device\":";
  write_str(out, o->device.str());
  out += ",\"dtype\":";
  write_str(out, dtype_text(o->dtype));
}

// One function node's entry, every field as the document writes it, keys sorted
// (NOTE [documents without pydantic on the hot path] in document.py).
void write_entry(std::string& out, const FnEntry& e) {
  out += "{\"created_in_pass\":";
  if (e.created_in_pass < 0) out += "null"; else format_int(out, e.created_in_pass);
  out += ",\"cut\":null,";
  const OutMeta* first = e.outs.empty() ? nullptr : &e.outs[0];
  write_meta(out, first);
  out += ",\"grad\":null,\"grad_history\":[],\"id\":";
  write_id(out, e.index);
  out += ",\"kind\":\"function\",\"line\":";
  if (e.line == kNullLine) out += "null"; else format_int(out, e.line);
  out += ",\"module\":";
  write_pystr(out, e.module);
  out += ",\"name\":";
  write_str(out, *e.name);
  if (e.outs.size() > 1) {
    out += ",\"outputs\":[";
    for (size_t i = 0; i < e.outs.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('{');
      write_meta(out, &e.outs[i]);
      out += ",\"shape\":";
      if (e.outs[i].known) write_ints(out, e.outs[i].shape); else out += "null";
      out.push_back('}');
    }
    out.push_back(']');
  }
  out += ",\"role\":null,\"saved\":[";
  for (size_t i = 0; i < e.saved.size(); ++i) {
    const SavedEntry& s = e.saved[i];
    if (i) out.push_back(',');
    out += "{\"bytes\":";
    format_int(out, s.bytes);
    out += ",\"dtype\":";
    write_str(out, dtype_text(s.dtype));
    out += ",\"freed_after_pass\":";
    if (s.freed_after < 0) out += "null"; else format_int(out, s.freed_after);
    out += s.is_input ? ",\"is_input\":true" : ",\"is_input\":false";
    out += s.is_param ? ",\"is_parameter\":true,\"name\":" : ",\"is_parameter\":false,\"name\":";
    write_str(out, s.name);
    out += ",\"shape\":";
    write_ints(out, s.shape);
    out.push_back('}');
  }
  out += "],\"saved_bytes\":";
  format_int(out, e.saved_bytes);
  if (e.saved_unread) out += ",\"saved_unread\":true";
  out += ",\"seq\":";
  format_int(out, e.seq);
  out += ",\"shape\":";
  if (first != nullptr && first->known) write_ints(out, first->shape); else out += "null";
  out += ",\"value\":null}";
}

// ------------------------------------------------------------------------- the core

struct Event {
  int32_t node;
  int32_t pass;       // -1: a forward event
  int32_t line;
  int32_t go_begin, go_n, gi_begin, gi_n;
  int32_t grad;       // AccumulateGrad: the leaf's .grad after accumulation
  int32_t hc_begin, hc_n;
};

struct Pass {
  int64_t task = -1;
  int32_t line = kNullLine;
  int32_t outer = -1;
  bool engine = false;
  std::vector<int32_t> executed;
};

struct Cached {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> weak;
  int64_t version;
  int32_t id;
};

struct SameData {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;
  int64_t version;
  int64_t numel;
  at::ScalarType dtype;
  int32_t id;
};

struct Core;

struct Hook : torch::autograd::FunctionPostHook {
  std::shared_ptr<Core> core;
  Node* node;
  int32_t index;
  bool acc;
  Hook(std::shared_ptr<Core> c, Node* n, int32_t i, bool a)
      : core(std::move(c)), node(n), index(i), acc(a) {}
  variable_list operator()(const variable_list& grad_inputs,
                           const variable_list& grad_outputs) override;
};

struct Core : std::enable_shared_from_this<Core> {
  std::mutex mu;
  std::vector<Value> values;
  std::vector<Event> events;
  std::vector<int32_t> refs;
  std::unordered_map<c10::TensorImpl*, Cached> cache;
  std::vector<Pass> passes;
  size_t passes_reported = 0;
  int32_t active = -1;
  std::unordered_map<Node*, std::vector<int32_t>> hook_changes;
  std::vector<std::pair<c10::intrusive_ptr<Node>, uintptr_t>> hooks;
  std::vector<int32_t> acc_events;  // AccumulateGrad events not yet drained
  ska::flat_hash_map<Node*, int32_t> known;  // every recorded node -> its index ("n<index>")
  std::vector<Node*> by_index;  // index -> node (nullptr: a tensor node)
  std::vector<c10::intrusive_ptr<Node>> alive;  // NOTE [keeping nodes alive] in graph.py
  int64_t max_events = 0, n_events = 0;
  int64_t bytes_left = 0, bytes_used = 0;
  int64_t cost_event = 0, cost_value = 0;
  std::string events_message, bytes_message;
  bool stopped = false, enabled = true;
  PyObject* on_limit = nullptr;    // rec.stop(message): raises LimitReached
  PyObject* on_created = nullptr;  // nodes made by a create_graph pass: (pass, line, [grads])

  int64_t version_of(const at::Tensor& t) {
    if (t.is_inference()) return -1;
    return static_cast<int64_t>(t.unsafeGetTensorImpl()->version_counter().current_version());
  }

  int32_t capture(const at::Tensor& t) {
    if (!t.defined()) return kNone;
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    int64_t ver = version_of(t);
    auto it = cache.find(impl);
    if (it != cache.end() && !it->second.weak.expired() && it->second.version == ver) {
      return it->second.id;
    }
    int32_t id = static_cast<int32_t>(values.size());
    const void* data = same_elements_key(t, ver);
    auto same = data != nullptr ? by_data.find(data) : by_data.end();
    if (same != by_data.end() && !same->second.storage.expired() && same->second.version == ver &&
        same->second.numel == t.numel() && same->second.dtype == t.scalar_type()) {
      Value v = values[static_cast<size_t>(same->second.id)];  // stats of the same elements
      v.shape.assign(t.sizes().begin(), t.sizes().end());
      values.push_back(std::move(v));
    } else {
      values.push_back(encode(t));
      if (data != nullptr && values.back().kind == 1) {
        by_data.insert_or_assign(data, SameData{c10::weak_intrusive_ptr<c10::StorageImpl>(
            t.storage().getWeakStorageImpl()), ver, t.numel(), t.scalar_type(), id});
      }
    }
    cache.insert_or_assign(impl, Cached{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(
                                   t.getIntrusivePtr()), ver, id});
    return id;
  }

  // NOTE [same elements, other shape]: a view, reshape or transpose of a big gradient (the
  // engine passes the same memory through ViewBackward, TransposeBackward, ...) holds the
  // same elements in the same memory order, so its stats (which ``encode`` computes over the
  // memory, in memory order) are the very same numbers: reused, only the shape differs. Keyed
  // by the first element's address, for dense CPU float tensors whose stats alone are kept;
  // the storage's weak reference and the version make sure it is still the same data.
  std::unordered_map<const void*, SameData> by_data;

  static const void* same_elements_key(const at::Tensor& t, int64_t ver) {
    if (ver < 0 || t.numel() <= kValuesLimit || !t.is_cpu() || t.layout() != at::kStrided ||
        t.is_quantized() || !t.has_storage() || !t.is_non_overlapping_and_dense()) {
      return nullptr;
    }
    at::ScalarType d = t.scalar_type();
    if (d != at::kFloat && d != at::kDouble) return nullptr;
    return t.const_data_ptr();
  }

  int32_t pass_for(int64_t task) {
    if (active >= 0) {
      Pass& p = passes[static_cast<size_t>(active)];
      if (p.task == -1 || p.task == task) { p.task = task; return active; }
    }
    for (size_t i = passes.size(); i-- > 0;) {
      if (passes[i].task == task) return static_cast<int32_t>(i);
    }
    // a backward the recorder did not start (a reentrant checkpoint's inner backward)
    Pass p;
    p.task = task;
    p.engine = true;
    p.outer = active;
    p.line = active >= 0 ? passes[static_cast<size_t>(active)].line : kNullLine;
    passes.push_back(std::move(p));
    return static_cast<int32_t>(passes.size() - 1);
  }

  // Raise ``message`` in Python through ``on_limit`` (called without ``mu`` held).
  [[noreturn]] void raise_limit(const std::string& message) {
    pybind11::gil_scoped_acquire gil;
    PyObject* res = PyObject_CallFunction(on_limit, "s", message.c_str());
    if (res == nullptr) throw python_error();
    Py_DECREF(res);
    throw std::runtime_error(message);
  }

  void on_done(Node* node, int32_t index, bool acc, const variable_list& gi,
               const variable_list& go) {
    if (!enabled || stopped) return;
    std::string limit;
    std::vector<at::Tensor> created;
    int32_t pass = -1, line = kNullLine;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!enabled || stopped) return;
      int64_t task = torch::autograd::get_current_graph_task_id();
      pass = pass_for(task);
      line = passes[static_cast<size_t>(pass)].line;
      int64_t n_values = 2 * acc;
      for (const auto& g : go) n_values += g.defined();
      for (const auto& g : gi) n_values += g.defined();
      ++n_events;
      bytes_used += cost_event + cost_value * n_values;
      if (n_events > max_events) limit = events_message;
      else if (bytes_used > bytes_left) limit = bytes_message;
      if (!limit.empty()) {
        stopped = true;
      } else {
        Event ev{};
        ev.node = index;
        ev.pass = pass;
        ev.line = line;
        ev.go_begin = static_cast<int32_t>(refs.size());
        for (const auto& g : go) refs.push_back(capture(g));
        ev.go_n = static_cast<int32_t>(go.size());
        ev.gi_begin = static_cast<int32_t>(refs.size());
        for (const auto& g : gi) refs.push_back(capture(g));
        ev.gi_n = static_cast<int32_t>(gi.size());
        ev.grad = kNone;
        if (acc) {
          auto* a = static_cast<torch::autograd::AccumulateGrad*>(node);
          const at::Tensor& grad = a->variable.grad();
          if (grad.defined()) ev.grad = capture(grad);
          acc_events.push_back(static_cast<int32_t>(events.size()));
        }
        auto hc = hook_changes.find(node);
        ev.hc_begin = static_cast<int32_t>(refs.size());
        ev.hc_n = 0;
        if (hc != hook_changes.end()) {
          for (int32_t r : hc->second) refs.push_back(r);
          ev.hc_n = static_cast<int32_t>(hc->second.size() / 2);
          hook_changes.erase(hc);
        }
        passes[static_cast<size_t>(pass)].executed.push_back(index);
        events.push_back(ev);
        if (on_created != nullptr && c10::GradMode::is_enabled()) {
          for (const auto& g : gi) {
            if (g.defined() && g.grad_fn()) created.push_back(g);
          }
        }
      }
    }
    if (!limit.empty()) raise_limit(limit);
    if (!created.empty()) {
      pybind11::gil_scoped_acquire gil;
      py::list tensors;
      for (const auto& t : created) {
        tensors.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(t)));
      }
      PyObject* res = PyObject_CallFunction(on_created, "iiO", pass, line, tensors.ptr());
      if (res == nullptr) throw python_error();
      Py_DECREF(res);
    }
  }
};

variable_list Hook::operator()(const variable_list& grad_inputs,
                               const variable_list& grad_outputs) {
  core->on_done(node, index, acc, grad_inputs, grad_outputs);
  return grad_inputs;
}

c10::intrusive_ptr<Node> node_of(PyObject* obj) {
  if (torch::autograd::THPCppFunction_Check(obj)) {
    return reinterpret_cast<torch::autograd::THPCppFunction*>(obj)->cdata;
  }
  if (THPFunction_Check(obj)) return reinterpret_cast<THPFunction*>(obj)->cdata;
  throw py::type_error("not an autograd node");
}

std::string value_json(Core& c, int32_t id, bool with_values) {
  std::string out;
  if (id == kNone) return "null";
  write_value(out, c.values[static_cast<size_t>(id)], with_values);
  return out;
}

// The handle of core: created by Python, owns the hooks until ``close``.
struct Recorder {
  std::shared_ptr<Core> core = std::make_shared<Core>();

  // NOTE [node entries in C++]: every recorded function node, in the order of their indices,
  // and where each index is in ``entries_`` (-1: a tensor node, kept by Python).
  std::vector<FnEntry> entries_;
  std::vector<int64_t> pos_;
  int64_t changes_ = 0;  // bumped when recorded entries change (``mark_freed``)
  // NOTE [graph memory] in document.py, kept as nodes are recorded: the bytes of activations
  // and inputs, and each parameter once.
  int64_t activation_total = 0;
  std::unordered_map<c10::TensorImpl*, int64_t> param_total;

  int64_t max_nodes_ = 0, cost_node_ = 0, cost_saved_ = 0, cost_edge_ = 0;
  std::string nodes_message_;

  void configure(int64_t max_events, int64_t cost_event, int64_t cost_value,
                 std::string events_message, std::string bytes_message, py::object on_limit,
                 py::object on_created, int64_t max_nodes, std::string nodes_message,
                 int64_t cost_node, int64_t cost_saved, int64_t cost_edge) {
    max_nodes_ = max_nodes;
    nodes_message_ = std::move(nodes_message);
    cost_node_ = cost_node;
    cost_saved_ = cost_saved;
    cost_edge_ = cost_edge;
    auto& c = *core;
    c.max_events = max_events;
    c.cost_event = cost_event;
    c.cost_value = cost_value;
    c.events_message = std::move(events_message);
    c.bytes_message = std::move(bytes_message);
    Py_XDECREF(c.on_limit);
    Py_XDECREF(c.on_created);
    c.on_limit = on_limit.inc_ref().ptr();
    c.on_created = on_created.is_none() ? nullptr : on_created.inc_ref().ptr();
  }

  void set_bytes_left(int64_t left) {
    std::lock_guard<std::mutex> lock(core->mu);
    core->bytes_left = left;
    core->bytes_used = 0;
  }

  int64_t bytes_used() {
    std::lock_guard<std::mutex> lock(core->mu);
    return core->bytes_used;
  }

  // A node found by ``walk`` becomes recorded: known by its index, kept alive, its forward
  // event noted, and its hook registered (unless ``hooks`` is off: the sweep at the end).
  void register_node(const c10::intrusive_ptr<Node>& node, int32_t index, int32_t line, bool hooks,
                     bool acc) {
    {
      std::lock_guard<std::mutex> lock(core->mu);
      core->known[node.get()] = index;
      if (core->by_index.size() <= static_cast<size_t>(index)) core->by_index.resize(static_cast<size_t>(index) + 1);
      core->by_index[static_cast<size_t>(index)] = node.get();
      core->alive.push_back(node);
      Event ev{};
      ev.node = index;
      ev.pass = -1;
      ev.line = line;
      ev.grad = kNone;
      core->events.push_back(ev);
      if (hooks) {
        uintptr_t key = node->add_post_hook(std::make_unique<Hook>(core, node.get(), index, acc));
        core->hooks.emplace_back(node, key);
      }
    }
  }

  // The index of a recorded node, or -1.
  int64_t index_of(py::handle node) {
    c10::intrusive_ptr<Node> n = node_of(node.ptr());
    std::lock_guard<std::mutex> lock(core->mu);
    auto it = core->known.find(n.get());
    return it == core->known.end() ? -1 : it->second;
  }

  // (node, entry JSON, privates, is_accumulate_grad) of every recorded function node from
  // the ``start``-th on, in the order they were recorded: for Python's ``fn_by_id``, built
  // only when a diagnosis asks (NOTE [node entries in C++]). ``privates``: (parameter or
  // None, storage address or None) per saved tensor.
  py::list infos(size_t start) {
    py::list out;
    for (size_t i = start; i < entries_.size(); ++i) {
      const FnEntry& e = entries_[i];
      PyObject* obj = torch::autograd::functionToPyObject(e.node);
      if (obj == nullptr) throw python_error();
      py::object pynode = py::reinterpret_steal<py::object>(obj);
      std::string doc;
      write_entry(doc, e);
      py::list privates;
      for (const SavedEntry& sv : e.saved) {
        py::object ptr = sv.has_ptr ? py::object(py::int_(sv.ptr)) : py::object(py::none());
        privates.append(py::make_tuple(sv.param, ptr));
      }
      out.append(py::make_tuple(pynode, py::bytes(doc), privates, e.acc));
    }
    return out;
  }

  // How often recorded entries changed after being recorded (``infos`` read before are stale).
  int64_t changes() const { return changes_; }

  // The JSON of the function nodes with indices in [a, b) (all of them recorded here), comma
  // separated, and of their edges.
  py::bytes nodes_json(int64_t a, int64_t b) {
    std::string out;
    out.reserve(static_cast<size_t>(b - a) * 400);
    for (int64_t i = a; i < b; ++i) {
      if (i > a) out.push_back(',');
      write_entry(out, entry_at(i));
    }
    return py::bytes(out);
  }

  py::bytes edges_json(int64_t a, int64_t b) {
    std::string out;
    out.reserve(static_cast<size_t>(b - a) * 120);
    for (int64_t i = a; i < b; ++i) {
      const FnEntry& e = entry_at(i);
      for (const auto& [input_nr, src] : e.edges) {
        if (!out.empty()) out.push_back(',');
        out += "{\"input_nr\":";
        format_int(out, input_nr);
        out += ",\"source\":";
        write_id(out, src);
        out += ",\"target\":";
        write_id(out, e.index);
        out.push_back('}');
      }
    }
    return py::bytes(out);
  }

  FnEntry& entry_at(int64_t index) {
    if (index < 0 || index >= static_cast<int64_t>(pos_.size()) || pos_[static_cast<size_t>(index)] < 0) {
      throw py::index_error("not a function node recorded by the core: n" + std::to_string(index));
    }
    return entries_[static_cast<size_t>(pos_[static_cast<size_t>(index)])];
  }

  // ``SeqLog.at``: the value noted last before ``seq`` was handed out (borrowed).
  static PyObject* seq_at(PyObject* seqs, PyObject* values, int64_t seq) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(seqs);
    while (lo < hi) {  // bisect_right
      Py_ssize_t mid = (lo + hi) / 2;
      if (seq < PyLong_AsLongLong(PyList_GET_ITEM(seqs, mid))) hi = mid; else lo = mid + 1;
    }
    return PyList_GET_ITEM(values, lo - 1);
  }

  // NOTE [discovery in C++], whole: ``walk``, then what Recorder.discover did per node in
  // Python: each node's line and module (``_placement``: by sequence number from the line
  // tracer's and module tracker's logs, an AccumulateGrad taking its consumer's), the node
  // and size limits, the ``seq`` and ``created_in_pass`` fields, and ``register_node``.
  // Returns (number recorded, leaves, bytes, limit message or None); ``leaves`` are
  // (leaf tensor, AccumulateGrad id, line) for Python to give tensor nodes. The entries stay
  // here (NOTE [node entries in C++]).
  py::tuple discover(py::list roots, bool read_saved, py::handle parameter, int64_t first_index,
                     int64_t bytes_left, py::object created_in_pass, bool tracer_active,
                     py::object line, py::object stack_module, py::object seq_mark,
                     py::list line_seqs, py::list line_values, py::list mod_seqs,
                     py::list mod_values, int64_t n_fns, bool hooks) {
    std::vector<FnEntry> batch = walk_batch(roots, read_saved, parameter, first_index);
    size_t m = batch.size();
    py::list leaves;
    if (m == 0) return py::make_tuple(0, leaves, 0, py::none());
    constexpr uint64_t kAcc = std::numeric_limits<uint64_t>::max();
    std::vector<std::pair<PyObject*, PyObject*>> places(m);  // borrowed (line, module)
    PyObject* nxt_line = line.ptr();
    PyObject* nxt_mod = Py_None;
    bool in_pass = !created_in_pass.is_none();
    int32_t pass_nr = in_pass ? created_in_pass.cast<int32_t>() : -1;
    bool has_mark = !seq_mark.is_none();
    uint64_t mark = has_mark ? seq_mark.cast<uint64_t>() : 0;
    for (size_t r = m; r-- > 0;) {
      uint64_t seq = batch[r].seqnr;
      if (seq == kAcc) { places[r] = {nxt_line, nxt_mod}; continue; }
      PyObject* l;
      PyObject* mo;
      if (in_pass) { l = line.ptr(); mo = Py_None; }
      else if (tracer_active) {
        l = seq_at(line_seqs.ptr(), line_values.ptr(), static_cast<int64_t>(seq));
        mo = seq_at(mod_seqs.ptr(), mod_values.ptr(), static_cast<int64_t>(seq));
      } else if (!has_mark || seq >= mark) { l = line.ptr(); mo = stack_module.ptr(); }
      else { l = Py_None; mo = Py_None; }
      places[r] = {l, mo};
      nxt_line = l;
      nxt_mod = mo;
    }
    py::object stopped = py::none();
    int64_t used = 0;
    size_t recorded = 0;
    for (size_t k = 0; k < m; ++k) {
      FnEntry& e = batch[k];
      int64_t index = e.index;
      if (index >= max_nodes_) { stopped = py::str(nodes_message_); break; }
      int64_t cost = cost_node_ + cost_saved_ * static_cast<int64_t>(e.saved.size()) +
                     cost_edge_ * static_cast<int64_t>(e.edges.size());
      if (used + cost > bytes_left) { stopped = py::str(core->bytes_message); break; }
      used += cost;
      auto [l, mo] = places[k];
      e.line = l == Py_None ? kNullLine : static_cast<int32_t>(PyLong_AsLong(l));
      e.module = py::reinterpret_borrow<py::object>(mo);
      e.seq = n_fns + static_cast<int64_t>(k);
      e.created_in_pass = pass_nr;
      register_node(e.node, static_cast<int32_t>(index), e.line, hooks, e.acc);
      for (const SavedEntry& sv : e.saved) {
        if (sv.is_param) {
          param_total.emplace(THPVariable_Unpack(sv.param.ptr()).unsafeGetTensorImpl(), sv.bytes);
        } else {
          activation_total += sv.bytes;
        }
      }
      if (e.acc) {
        auto* a = static_cast<torch::autograd::AccumulateGrad*>(e.node.get());
        py::object leaf = a->variable.defined()
            ? py::reinterpret_steal<py::object>(THPVariable_Wrap(a->variable)) : py::none();
        leaves.append(py::make_tuple(leaf, py::reinterpret_steal<py::object>(id_str(index)),
                                     py::handle(l)));
      }
      if (pos_.size() <= static_cast<size_t>(index)) pos_.resize(static_cast<size_t>(index) + 1, -1);
      pos_[static_cast<size_t>(index)] = static_cast<int64_t>(entries_.size());
      entries_.push_back(std::move(e));
      ++recorded;
    }
    return py::make_tuple(recorded, leaves, used, stopped);
  }

  // Python's begin_pass: the index this pass gets (engine passes may have taken some).
  int32_t begin_pass(py::object line) {
    std::lock_guard<std::mutex> lock(core->mu);
    Pass p;
    p.line = line.is_none() ? kNullLine : line.cast<int32_t>();
    core->passes.push_back(std::move(p));
    return static_cast<int32_t>(core->passes.size() - 1);
  }

  // The recorder stopped (a limit): hooks record nothing more.
  void stop() {
    std::lock_guard<std::mutex> lock(core->mu);
    core->stopped = true;
  }

  void set_active(int32_t pass) {
    std::lock_guard<std::mutex> lock(core->mu);
    core->active = pass;
  }

  // Passes begun by the engine itself since the last call: [(index, outer)].
  std::vector<std::pair<int32_t, int32_t>> new_engine_passes() {
    std::lock_guard<std::mutex> lock(core->mu);
    std::vector<std::pair<int32_t, int32_t>> out;
    for (size_t i = core->passes_reported; i < core->passes.size(); ++i) {
      if (core->passes[i].engine) out.emplace_back(static_cast<int32_t>(i), core->passes[i].outer);
    }
    core->passes_reported = core->passes.size();
    return out;
  }

  void end_backward() {
    // the outermost backward call returned: its gradients are not met again
    std::lock_guard<std::mutex> lock(core->mu);
    core->cache.clear();
    core->by_data.clear();
  }

  // AccumulateGrad events since the last call: [(leaf tensor, grad value id)].
  py::list take_accumulations() {
    std::vector<std::pair<Node*, int32_t>> taken;
    {
      std::lock_guard<std::mutex> lock(core->mu);
      for (int32_t e : core->acc_events) {
        const Event& ev = core->events[static_cast<size_t>(e)];
        taken.emplace_back(core->by_index.at(static_cast<size_t>(ev.node)), ev.grad);
      }
      core->acc_events.clear();
    }
    py::list out;
    for (auto [node, grad] : taken) {
      auto* a = static_cast<torch::autograd::AccumulateGrad*>(node);
      py::object leaf = a->variable.defined()
          ? py::reinterpret_steal<py::object>(THPVariable_Wrap(a->variable)) : py::none();
      out.append(py::make_tuple(leaf, grad));
    }
    return out;
  }

  void hook_change(const at::Tensor& before, const at::Tensor& after) {
    c10::intrusive_ptr<Node> node = torch::autograd::get_current_node();
    if (!node) return;
    std::lock_guard<std::mutex> lock(core->mu);
    auto& v = core->hook_changes[node.get()];
    v.push_back(core->capture(before));
    v.push_back(core->capture(after));
  }

  // Values Python must encode itself (rare dtypes): [(id, tensor)].
  std::vector<std::pair<int32_t, at::Tensor>> held() {
    std::lock_guard<std::mutex> lock(core->mu);
    std::vector<std::pair<int32_t, at::Tensor>> out;
    for (size_t i = 0; i < core->values.size(); ++i) {
      auto& v = core->values[i];
      if (v.kind == 3 && v.py_with.empty()) out.emplace_back(static_cast<int32_t>(i), v.held);
    }
    return out;
  }

  void set_encoded(int32_t id, std::string with_values, std::string without_values) {
    std::lock_guard<std::mutex> lock(core->mu);
    auto& v = core->values.at(static_cast<size_t>(id));
    v.py_with = std::move(with_values);
    v.py_without = std::move(without_values);
    v.held = at::Tensor();
  }

  // (canonical JSON of value ``id``, with or without its values; the number of values it holds).
  std::pair<py::bytes, int64_t> value(int32_t id, bool with_values) {
    std::lock_guard<std::mutex> lock(core->mu);
    if (id == kNone) return {py::bytes("null"), 0};
    const Value& v = core->values.at(static_cast<size_t>(id));
    bool has = v.kind == 2 || (v.kind == 3 && v.py_with != v.py_without);
    return {py::bytes(value_json(*core, id, with_values)), has ? v.numel : 0};
  }

  // The events array as canonical JSON; values spend ``budget`` numbers in document order
  // (grad_outputs, grad_inputs, grad, hook changes: the order Python resolves them in), which
  // is not the order of the keys: a first pass decides which references carry values.
  std::pair<py::bytes, int64_t> events_json(int64_t budget) {
    std::lock_guard<std::mutex> lock(core->mu);
    auto& c = *core;
    std::vector<uint8_t> with(c.refs.size(), 0);
    std::vector<uint8_t> grad_with(c.events.size(), 0);
    auto spend = [&](int32_t id) -> uint8_t {
      if (id == kNone) return 0;
      const Value& v = c.values[static_cast<size_t>(id)];
      bool has = v.kind == 2 || (v.kind == 3 && v.py_with != v.py_without);
      if (!has) return 0;
      if (v.numel > budget) { budget = 0; return 0; }
      budget -= v.numel;
      return 1;
    };
    for (size_t i = 0; i < c.events.size(); ++i) {
      const Event& ev = c.events[i];
      if (ev.pass < 0) continue;
      for (int32_t k = 0; k < ev.go_n; ++k) with[ev.go_begin + k] = spend(c.refs[ev.go_begin + k]);
      for (int32_t k = 0; k < ev.gi_n; ++k) with[ev.gi_begin + k] = spend(c.refs[ev.gi_begin + k]);
      grad_with[i] = spend(ev.grad);
      for (int32_t k = 0; k < 2 * ev.hc_n; ++k) with[ev.hc_begin + k] = spend(c.refs[ev.hc_begin + k]);
    }
    // the size, closely enough that the buffer is allocated once (it is megabytes: growing it
    // copies and faults in fresh pages)
    size_t estimate = 16 + c.events.size() * 170;
    auto guess = [&](int32_t id, uint8_t w) {
      if (id == kNone) return size_t{4};
      const Value& v = c.values[static_cast<size_t>(id)];
      return size_t{160} + (w && v.kind == 2 ? static_cast<size_t>(v.numel) * 15 : 0);
    };
    for (size_t i = 0; i < c.events.size(); ++i) {
      const Event& ev = c.events[i];
      if (ev.pass < 0) continue;
      for (int32_t k = 0; k < ev.go_n; ++k) estimate += guess(c.refs[ev.go_begin + k], with[ev.go_begin + k]);
      for (int32_t k = 0; k < ev.gi_n; ++k) estimate += guess(c.refs[ev.gi_begin + k], with[ev.gi_begin + k]);
      estimate += guess(ev.grad, grad_with[i]);
      for (int32_t k = 0; k < 2 * ev.hc_n; ++k) estimate += guess(c.refs[ev.hc_begin + k], with[ev.hc_begin + k]) + 20;
    }
    std::string out;
    out.reserve(estimate);
    // a gradient is met twice as a rule (one node's grad_input, the next one's grad_output):
    // its JSON without values is written once and copied the second time
    std::vector<std::pair<size_t, size_t>> written(c.values.size(), {0, 0});
    auto val = [&](int32_t id, bool w) {
      if (id == kNone) { out += "null"; return; }
      if (w) { write_value(out, c.values[static_cast<size_t>(id)], true); return; }
      auto [at, n] = written[static_cast<size_t>(id)];
      if (n != 0) {
        if (out.size() + n > out.capacity()) out.reserve(2 * (out.size() + n));
        out.append(out.data() + at, n);  // no reallocation now: the source stays valid
        return;
      }
      size_t begin = out.size();
      write_value(out, c.values[static_cast<size_t>(id)], false);
      written[static_cast<size_t>(id)] = {begin, out.size() - begin};
    };
    auto list = [&](int32_t begin, int32_t n) {
      out.push_back('[');
      for (int32_t k = 0; k < n; ++k) {
        if (k) out.push_back(',');
        val(c.refs[static_cast<size_t>(begin + k)], with[static_cast<size_t>(begin + k)]);
      }
      out.push_back(']');
    };
    out.push_back('[');
    for (size_t i = 0; i < c.events.size(); ++i) {
      const Event& ev = c.events[i];
      if (i) out.push_back(',');
      if (ev.pass < 0) {
        out += "{\"changed_by_hook\":false,\"grad\":null,\"grad_inputs\":null,"
               "\"grad_outputs\":null,\"line\":";
        if (ev.line == kNullLine) out += "null"; else format_int(out, ev.line);
        out += ",\"node\":\"n";
        format_int(out, ev.node);
        out += "\",\"pass\":null,\"phase\":\"forward\"}";
        continue;
      }
      out += ev.hc_n ? "{\"changed_by_hook\":true,\"grad\":" : "{\"changed_by_hook\":false,\"grad\":";
      val(ev.grad, grad_with[i]);
      out += ",\"grad_inputs\":";
      list(ev.gi_begin, ev.gi_n);
      out += ",\"grad_outputs\":";
      list(ev.go_begin, ev.go_n);
      if (ev.hc_n) {
        out += ",\"hook_changes\":[";
        for (int32_t k = 0; k < ev.hc_n; ++k) {
          size_t b = static_cast<size_t>(ev.hc_begin + 2 * k);
          if (k) out.push_back(',');
          out += "{\"after\":";
          val(c.refs[b + 1], with[b + 1]);
          out += ",\"before\":";
          val(c.refs[b], with[b]);
          out.push_back('}');
        }
        out.push_back(']');
      }
      out += ",\"line\":";
      if (ev.line == kNullLine) out += "null"; else format_int(out, ev.line);
      out += ",\"node\":\"n";
      format_int(out, ev.node);
      out += "\",\"pass\":";
      format_int(out, ev.pass);
      out += ",\"phase\":\"backward\"}";
    }
    out.push_back(']');
    return {py::bytes(out), budget};
  }

  // NOTE [discovery in C++]: ``graph.walk_new`` + ``_creation_order`` + ``describe_batch``:
  // every node reachable from ``roots`` that is not known yet, in creation order, as complete
  // entries, the k-th with index ``first_index + k``. Same order and results as the Python
  // functions (tested).
  std::vector<FnEntry> walk_batch(py::list roots, bool read_saved, py::handle parameter,
                                  int64_t first_index) {
    std::vector<c10::intrusive_ptr<Node>> stack;
    ska::flat_hash_map<Node*, size_t> found;  // -> position in ``order`` (DFS order)
    std::vector<c10::intrusive_ptr<Node>> order;
    {
      std::lock_guard<std::mutex> lock(core->mu);
      auto& known = core->known;
      for (auto r : roots) {
        if (r.is_none()) continue;
        c10::intrusive_ptr<Node> n = node_of(r.ptr());
        if (n && !known.count(n.get())) stack.push_back(std::move(n));
      }
      while (!stack.empty()) {
        c10::intrusive_ptr<Node> n = std::move(stack.back());
        stack.pop_back();
        if (found.count(n.get())) continue;
        found.emplace(n.get(), order.size());
        for (const auto& e : n->next_edges()) {
          Node* g = e.function.get();
          if (g != nullptr && !known.count(g) && !found.count(g)) stack.push_back(e.function);
        }
        order.push_back(std::move(n));
      }
    }
    size_t m = order.size();
    std::vector<FnEntry> out;
    if (m == 0) return out;
    // _creation_order: Kahn's algorithm, keyed by sequence number; an AccumulateGrad sorts
    // just before its earliest consumer.
    constexpr uint64_t kAcc = std::numeric_limits<uint64_t>::max();
    std::vector<uint64_t> seq(m);
    std::vector<std::vector<size_t>> consumers(m);
    std::vector<int> pending(m, 0);
    for (size_t i = 0; i < m; ++i) seq[i] = order[i]->sequence_nr();
    for (size_t i = 0; i < m; ++i) {
      for (const auto& e : order[i]->next_edges()) {
        auto it = e.function ? found.find(e.function.get()) : found.end();
        if (it != found.end()) { consumers[it->second].push_back(i); ++pending[i]; }
      }
    }
    using Key = std::tuple<uint64_t, int, size_t, size_t>;  // (seq, acc last, tie, node)
    std::vector<Key> heap;
    auto key0 = [&](size_t i) -> std::pair<uint64_t, int> {
      if (seq[i] != kAcc) return {seq[i], 1};
      uint64_t first = kAcc;
      for (size_t c : consumers[i]) if (seq[c] != kAcc && seq[c] < first) first = seq[c];
      return {first, 0};
    };
    std::vector<std::pair<uint64_t, int>> keys(m);
    for (size_t i = 0; i < m; ++i) keys[i] = key0(i);
    auto cmp = [](const Key& a, const Key& b) { return a > b; };
    for (size_t i = 0; i < m; ++i) {
      if (pending[i] == 0) heap.emplace_back(keys[i].first, keys[i].second, i, i);
    }
    std::make_heap(heap.begin(), heap.end(), cmp);
    std::vector<size_t> ordered;
    ordered.reserve(m);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      size_t i = std::get<3>(heap.back());
      heap.pop_back();
      ordered.push_back(i);
      for (size_t c : consumers[i]) {
        if (--pending[c] == 0) {
          heap.emplace_back(keys[c].first, keys[c].second, ordered.size() + m, c);
          std::push_heap(heap.begin(), heap.end(), cmp);
        }
      }
    }
    std::vector<int64_t> batch_pos(m, -1);
    for (size_t k = 0; k < ordered.size(); ++k) batch_pos[ordered[k]] = static_cast<int64_t>(k);
    // ``known`` only changes in ``forward`` (Python, with the GIL, like this call): no copy
    const auto& known_now = core->known;
    out.resize(ordered.size());
    for (size_t k = 0; k < ordered.size(); ++k) {
      size_t i = ordered[k];
      Node* n = order[i].get();
      FnEntry& e = out[k];
      e.index = first_index + static_cast<int64_t>(k);
      e.node = order[i];
      e.seqnr = seq[i];
      e.name = name_of(n);
      uint32_t n_out = n->num_inputs();
      e.outs.resize(n_out);
      for (uint32_t o = 0; o < n_out; ++o) {
        const auto& meta = n->input_metadata(o);
        OutMeta& om = e.outs[o];
        try {
          if (meta.is_nested_tensor()) throw std::runtime_error("nested");
          for (const auto& d : meta.shape_as_dim_vector()) om.shape.push_back(d.expect_int());
          om.dtype = c10::typeMetaToScalarType(meta.dtype());
          om.device = meta.device();
          om.known = true;
        } catch (const python_error&) {
          throw;
        } catch (const std::exception&) {
          om.known = false;
          om.shape.clear();
        }
      }
      if (read_saved) {
        py::object pynode;
        std::vector<SavedAttr>& attrs = attrs_for(order[i], pynode);
        if (!attrs.empty()) read_saved_into(pynode, attrs, parameter, e);
      } else {
        e.saved_unread = true;
      }
      int64_t input_nr = 0;
      for (const auto& edge : n->next_edges()) {
        Node* g = edge.function.get();
        if (g != nullptr) {
          auto f = found.find(g);
          int64_t src = f != found.end() ? first_index + batch_pos[f->second] : known_now.at(g);
          e.edges.emplace_back(input_nr, src);
        }
        ++input_nr;
      }
      e.acc = dynamic_cast<torch::autograd::AccumulateGrad*>(n) != nullptr;
    }
    return out;
  }

  // ``Node.name()`` without a namespace, interned: fixed per C++ class (cached by class), a
  // custom Function's from its Python class.
  std::unordered_map<const std::type_info*, const std::string*> names_;
  std::unordered_set<std::string> name_pool_;

  const std::string* name_of(Node* n) {
    const std::type_info* type = &typeid(*n);
    bool py_class = std::strcmp(type->name(), kPyNode) == 0;
    if (!py_class) {
      auto it = names_.find(type);
      if (it != names_.end()) return it->second;
    }
    std::string name = n->name();
    size_t colon = name.rfind("::");
    if (colon != std::string::npos) name.erase(0, colon + 2);
    const std::string* interned = &*name_pool_.insert(std::move(name)).first;
    if (!py_class) names_.emplace(type, interned);
    return interned;
  }

  // The walk alone, for the benchmark (``bench_capture.py``): how many nodes it found.
  size_t walk(py::list roots, bool read_saved, py::handle parameter, int64_t first_index) {
    return walk_batch(roots, read_saved, parameter, first_index).size();
  }

  // NOTE [reading saved tensors] in saved.py: the attributes that hold what nodes of this
  // class saved (``saved_attrs``), found once per class: per C++ node type (no Python object
  // needed to know there is nothing to read), per Python class for custom Functions. An
  // attribute seen holding something that is not a tensor (a size, a scalar) is skipped from
  // then on: the generated node classes give each attribute one fixed type.
  struct SavedAttr {
    std::string attr, label;
    bool skip = false;
  };
  std::unordered_map<const std::type_info*, std::vector<SavedAttr>> attrs_by_cpp_type;
  std::unordered_map<PyTypeObject*, std::vector<SavedAttr>> attrs_by_py_type;

  std::vector<SavedAttr>& attrs_for(const c10::intrusive_ptr<Node>& node, py::object& pynode) {
    Node* n = node.get();
    bool py_class = std::strcmp(typeid(*n).name(), kPyNode) == 0;
    if (!py_class) {
      auto it = attrs_by_cpp_type.find(&typeid(*n));
      if (it != attrs_by_cpp_type.end()) {
        if (!it->second.empty()) pynode = to_python(node);
        return it->second;
      }
    }
    pynode = to_python(node);
    PyTypeObject* type = Py_TYPE(pynode.ptr());
    auto hit = attrs_by_py_type.find(type);
    if (hit == attrs_by_py_type.end()) hit = attrs_by_py_type.emplace(type, saved_attrs(pynode.ptr())).first;
    if (!py_class) return attrs_by_cpp_type.emplace(&typeid(*n), hit->second).first->second;
    return hit->second;
  }

  static py::object to_python(const c10::intrusive_ptr<Node>& node) {
    PyObject* obj = torch::autograd::functionToPyObject(node);
    if (obj == nullptr) throw python_error();
    return py::reinterpret_steal<py::object>(obj);
  }

  static std::vector<SavedAttr> saved_attrs(PyObject* node) {
    std::vector<SavedAttr> attrs;
    py::list names = py::reinterpret_steal<py::list>(PyObject_Dir(node));
    if (names.ptr() == nullptr) throw python_error();
    bool ctx = false, raw = false;
    for (auto nm : names) {
      std::string a = nm.cast<std::string>();
      ctx |= a == "saved_tensors";
      raw |= a == "_raw_saved_tensors";
    }
    if (ctx && raw) {
      attrs.push_back({"saved_tensors", "saved_tensors", false});
    } else {
      for (auto nm : names) {
        std::string a = nm.cast<std::string>();
        if (a.rfind("_saved_", 0) == 0) attrs.push_back({a, a.substr(7), false});
      }
    }
    return attrs;
  }

  // Each saved tensor of ``node`` as a complete saved-tensor entry of ``e``, with what is kept
  // of it but never written (parameter, storage address). Non-tensor saved values are skipped.
  void read_saved_into(py::handle node, std::vector<SavedAttr>& attrs, py::handle parameter,
                       FnEntry& e) {
    auto* param_type = reinterpret_cast<PyTypeObject*>(parameter.ptr());
    auto entry = [&](std::string label, PyObject* obj) {
      const at::Tensor& t = THPVariable_Unpack(obj);
      SavedEntry sv;
      sv.bytes = t.numel() * static_cast<int64_t>(t.element_size());
      sv.param = py::none();
      if (PyType_IsSubtype(Py_TYPE(obj), param_type)) {
        sv.param = py::reinterpret_borrow<py::object>(obj);
      } else if (t.is_view()) {
        py::object base = py::reinterpret_steal<py::object>(THPVariable_Wrap(t._base()));
        if (PyType_IsSubtype(Py_TYPE(base.ptr()), param_type)) sv.param = base;
      }
      sv.is_param = !sv.param.is_none();
      sv.name = std::move(label);
      sv.shape.assign(t.sizes().begin(), t.sizes().end());
      sv.dtype = t.scalar_type();
      sv.is_input = !sv.is_param && !t.grad_fn() && !t.is_view();
      try {
        if (t.has_storage()) {
          sv.ptr = reinterpret_cast<uintptr_t>(t.storage().data_ptr().get());
          sv.has_ptr = true;
        }
      } catch (const std::exception&) {
      }
      e.saved_bytes += sv.bytes;
      e.saved.push_back(std::move(sv));
    };
    for (SavedAttr& attr : attrs) {
      if (attr.skip) continue;
      PyObject* value = PyObject_GetAttrString(node.ptr(), attr.attr.c_str());
      if (value == nullptr) { PyErr_Clear(); continue; }  // freed, or unreadable for this node
      py::object v = py::reinterpret_steal<py::object>(value);
      try {
        if (THPVariable_Check(value)) {
          entry(attr.label, value);
        } else if (PyTuple_Check(value) || PyList_Check(value)) {
          py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
          size_t n = seq.size();
          for (size_t k = 0; k < n; ++k) {
            py::object item = seq[k];
            if (THPVariable_Check(item.ptr())) {
              entry(attr.label + "[" + std::to_string(k) + "]", item.ptr());
            } else if (k == 0 && !item.is_none()) {
              attr.skip = true;  // a list of sizes, not of tensors
              break;
            }
          }
        } else if (value != Py_None) {
          attr.skip = true;  // a scalar, a size: never a tensor for this class
        }
      } catch (const std::exception&) {
        // an unreadable saved value is skipped, as in Python
      }
    }
  }

  // Pass ``pass`` released the saved tensors of every node it executed (no retain_graph):
  // each entry not freed before is marked freed after this pass; returns the bytes freed,
  // parameters excluded (releasing a reference to a parameter frees nothing).
  int64_t mark_freed(int32_t pass) {
    std::vector<int32_t> executed;
    {
      std::lock_guard<std::mutex> lock(core->mu);
      executed = core->passes.at(static_cast<size_t>(pass)).executed;
    }
    int64_t freed = 0;
    for (int32_t index : executed) {
      if (index >= static_cast<int32_t>(pos_.size()) || pos_[static_cast<size_t>(index)] < 0) continue;
      for (SavedEntry& sv : entries_[static_cast<size_t>(pos_[static_cast<size_t>(index)])].saved) {
        if (sv.freed_after >= 0) continue;
        sv.freed_after = pass;
        ++changes_;
        if (!sv.is_param) freed += sv.bytes;
      }
    }
    return freed;
  }

  // The bytes held by saved tensors: activations and inputs per node, each parameter once.
  int64_t saved_total() {
    int64_t total = activation_total;
    for (const auto& [impl, bytes] : param_total) total += bytes;
    return total;
  }

  // Remove every hook (NOTE: also breaks the core <-> node reference cycle).
  void close() {
    std::vector<std::pair<c10::intrusive_ptr<Node>, uintptr_t>> hooks;
    {
      std::lock_guard<std::mutex> lock(core->mu);
      core->enabled = false;
      hooks.swap(core->hooks);
      core->cache.clear();
      core->by_data.clear();
      core->hook_changes.clear();
    }
    for (auto& [node, key] : hooks) node->del_post_hook(key);
    hooks.clear();
    Py_CLEAR(core->on_limit);
    Py_CLEAR(core->on_created);
  }
};


// ------------------------------------------------------------------------- the line tracer

// NOTE [a C line tracer]
//     ``timeline.LineTracer`` notes the snippet's current line against autograd's sequence
//     counter (NOTE [lines by sequence number]). As a ``sys.settrace`` function it cost a
//     Python call on every Python call anywhere outside library modules: an optimizer's step
//     in a training loop makes hundreds, and tracing was a third of such a snippet's capture.
//     Here the trace function is C: a call, line or return event of another file costs a
//     pointer comparison; on the snippet's lines it calls ``on_step`` (only when nodes are
//     pending: NOTE [discovery in batches]) and notes the line in the Python ``SeqLog``, as
//     the Python tracer did. Suspending and pausing remove it (``PyEval_SetTrace(NULL)``), so
//     library modules still run untraced.
struct LineTrace {
  py::object filename, log, on_step, pending, current_key;
  PyObject* seqs = nullptr;    // log._seqs (kept alive by ``log``)
  PyObject* values = nullptr;  // log._values
  std::unordered_map<PyObject*, bool> files;  // co_filename -> is the snippet's (refs held)
  bool enabled = false;
  ~LineTrace() {
    for (auto& [f, _] : files) Py_DECREF(f);
  }

  bool mine(PyFrameObject* frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    PyObject* f = code->co_filename;
    Py_DECREF(code);
    if (f == filename.ptr()) return true;
    auto it = files.find(f);
    if (it != files.end()) return it->second;
    int eq = PyUnicode_Compare(f, filename.ptr());
    if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
    Py_INCREF(f);
    return files.emplace(f, eq == 0).first->second;
  }

  // ``SeqLog.note(line)``
  int note(int line) {
    int64_t seq = static_cast<int64_t>(at::sequence_number::peek());
    PyObject* v = PyLong_FromLong(line);
    if (v == nullptr) return -1;
    if (PyObject_SetAttr(log.ptr(), current_key.ptr(), v) < 0) { Py_DECREF(v); return -1; }
    Py_ssize_t n = PyList_GET_SIZE(seqs);
    if (n > 0 && PyLong_AsLongLong(PyList_GET_ITEM(seqs, n - 1)) == seq) {
      return PyList_SetItem(values, n - 1, v);  // steals v
    }
    PyObject* s = PyLong_FromLongLong(seq);
    int rc = s == nullptr ? -1 : PyList_Append(seqs, s);
    Py_XDECREF(s);
    if (rc == 0) rc = PyList_Append(values, v);
    Py_DECREF(v);
    return rc;
  }

  int step() {
    if (on_step.is_none() || PyList_GET_SIZE(pending.ptr()) == 0) return 0;
    PyObject* r = PyObject_CallNoArgs(on_step.ptr());
    if (r == nullptr) return -1;
    Py_DECREF(r);
    return 0;
  }
};

thread_local LineTrace* active_trace = nullptr;

int trace_line(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  LineTrace* t = active_trace;
  if (t == nullptr || (what != PyTrace_LINE && what != PyTrace_RETURN) || !t->mine(frame)) return 0;
  int rc = t->step();
  if (rc == 0) {
    if (what == PyTrace_LINE) {
      rc = t->note(PyFrame_GetLineNumber(frame));
    } else {  // back to the innermost snippet frame still running (maybe via library code)
      PyFrameObject* back = PyFrame_GetBack(frame);
      while (back != nullptr && !t->mine(back)) {
        PyFrameObject* next = PyFrame_GetBack(back);
        Py_DECREF(back);
        back = next;
      }
      if (back != nullptr) {
        rc = t->note(PyFrame_GetLineNumber(back));
        Py_DECREF(back);
      }
    }
  }
  if (rc < 0) {  // as sys.settrace does when its function raises: tracing ends here
    PyEval_SetTrace(nullptr, nullptr);
    t->enabled = false;
  }
  return rc;
}

// The Python face: ``timeline.LineTracer`` drives it (install, enable/disable, uninstall).
struct Tracer {
  std::unique_ptr<LineTrace> t;

  void start(py::object filename, py::object log, py::object on_step, py::list pending) {
    stop();  // an earlier run of this tracer: never leave the trace function a freed state
    auto fresh = std::make_unique<LineTrace>();
    fresh->filename = std::move(filename);
    fresh->log = std::move(log);
    fresh->on_step = std::move(on_step);
    fresh->pending = std::move(pending);
    fresh->current_key = py::reinterpret_steal<py::object>(PyUnicode_InternFromString("current"));
    py::object seqs = fresh->log.attr("_seqs"), values = fresh->log.attr("_values");
    if (!PyUnicode_Check(fresh->filename.ptr()) || !PyList_Check(seqs.ptr()) || !PyList_Check(values.ptr())) {
      throw py::type_error("Tracer.start(filename: str, log: SeqLog, on_step, pending: list)");
    }
    fresh->seqs = seqs.ptr();      // kept alive by ``log``, which the SeqLog never rebinds
    fresh->values = values.ptr();
    t = std::move(fresh);
    active_trace = t.get();
    set_enabled(true);
  }

  void set_enabled(bool on) {
    if (!t) return;
    // ``sys.gettrace()`` then answers an inert mark (not this object: a snippet could call it):
    // a nested record sees that tracing is taken
    if (on) PyEval_SetTrace(trace_line, mark());
    else PyEval_SetTrace(nullptr, nullptr);
    t->enabled = on;
  }

  static PyObject* mark() {
    static PyObject* m = PyUnicode_InternFromString("gradtrace line tracer (C)");  // immutable
    return m;
  }

  void stop() {
    if (!t) return;
    set_enabled(false);
    if (active_trace == t.get()) active_trace = nullptr;
    t.reset();
  }
};

}  // namespace gradtrace

PYBIND11_MODULE(_native, m) {
  m.doc() = "gradtrace capture core (see _native.cpp)";
  m.attr("VALUES_LIMIT") = gradtrace::kValuesLimit;
  m.def("format_double", [](double x) {
    std::string out;
    gradtrace::format_double(out, x);
    return out;
  });
  m.def("format_float32", [](double x) {
    std::string out;
    gradtrace::format_float32(out, x);
    return out;
  });
  m.def("encode_json", [](const at::Tensor& t) {
    gradtrace::Value v = gradtrace::encode(t);
    std::string out;
    if (v.kind == 3) return py::bytes("");
    gradtrace::write_value(out, v, true);
    return py::bytes(out);
  });
  py::class_<gradtrace::Tracer>(m, "Tracer")
      .def(py::init<>())
      .def("start", &gradtrace::Tracer::start)
      .def("set_enabled", &gradtrace::Tracer::set_enabled)
      .def("stop", &gradtrace::Tracer::stop);
  py::class_<gradtrace::Recorder>(m, "Recorder")
      .def(py::init<>())
      .def("configure", &gradtrace::Recorder::configure)
      .def("set_bytes_left", &gradtrace::Recorder::set_bytes_left)
      .def("bytes_used", &gradtrace::Recorder::bytes_used)
      .def("discover", &gradtrace::Recorder::discover)
      .def("index_of", &gradtrace::Recorder::index_of)
      .def("infos", &gradtrace::Recorder::infos)
      .def("begin_pass", &gradtrace::Recorder::begin_pass)
      .def("set_active", &gradtrace::Recorder::set_active)
      .def("stop", &gradtrace::Recorder::stop)
      .def("new_engine_passes", &gradtrace::Recorder::new_engine_passes)
      .def("end_backward", &gradtrace::Recorder::end_backward)
      .def("take_accumulations", &gradtrace::Recorder::take_accumulations)
      .def("hook_change", &gradtrace::Recorder::hook_change)
      .def("held", &gradtrace::Recorder::held)
      .def("set_encoded", &gradtrace::Recorder::set_encoded)
      .def("value", &gradtrace::Recorder::value)
      .def("events_json", &gradtrace::Recorder::events_json)
      .def("walk", &gradtrace::Recorder::walk)
      .def("nodes_json", &gradtrace::Recorder::nodes_json)
      .def("edges_json", &gradtrace::Recorder::edges_json)
      .def("changes", &gradtrace::Recorder::changes)
      .def("mark_freed", &gradtrace::Recorder::mark_freed)
      .def("saved_total", &gradtrace::Recorder::saved_total)
      .def("close", &gradtrace::Recorder::close);
}
