// gradtrace capture core: the tensor file's side of the document, in bulk
// (capture/tensordoc.py; ``PyCore.stats_json`` and ``PyCore.event_candidates`` are the twins).
// (one translation unit: ``_native.cpp`` includes every part in order)
//
// NOTE [the tensor file's side in bulk]
//     A run keeps thousands of tensors (GRU-200: ~4,000 forward outputs, ~12,000 gradient
//     references). Asking the core for each one's stats, then for each kept gradient's tensor
//     and version, one Python call at a time, cost more than the file itself. Here every
//     backward value's candidate row for the file (its key, where the key goes in the events'
//     JSON as ``events_json`` wrote it, the tensor, its bytes, its class and why it cannot be
//     kept) is made in one call, into the core's ``KeptFile`` (NOTE [the kept file in one place]
//     in ``cxx/keptfile.h``), with the first backward event whose flowing gradient is not
//     finite; ``stats_json`` writes tensors' stats in one call.
#pragma once
#include "prelude.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace gradtrace {

// Each tensor's TensorValue without values, as capture writes one (``encode``, ``write_value``);
// b"" for a tensor only Python's encoder writes (``Value::kind`` 3).
py::list stats_json(const std::vector<at::Tensor>& ts) {
  py::list out;
  std::string text;
  for (const at::Tensor& t : ts) {
    Value v = encode(t);
    if (v.kind == 3) {
      out.append(py::bytes(""));
      continue;
    }
    text.clear();
    write_value(text, v, false);
    out.append(py::bytes(text));
  }
  return out;
}

// The file's classes (``candidates.LEAF``, ``GRADIENT``: NOTE [what the budget keeps first]).
constexpr int kRankLeaf = 0, kRankGradient = 2, kRankForward = 3;

// One tensor the file may hold (``candidates.Candidate``) as ``KeptFile`` (``cxx/keptfile.h``)
// holds it: no Python object. ``at``: where its key goes in the events' JSON (-1: elsewhere).
struct KeptRow {
  std::string key;
  at::Tensor tensor;
  int64_t nbytes;
  int rank;
  std::string reason;  // empty: none
  int64_t at = -1;
  bool kept = false;
};
using KeptRows = std::vector<KeptRow>;

// ``candidates.storable`` for a kept alias (never a subclass or a transform's wrapper:
// ``Core::keep_alias`` holds none): whether safetensors has a code for it.
bool storable(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kDouble: case at::kFloat: case at::kHalf: case at::kBFloat16: case at::kLong: case at::kInt:
    case at::kShort: case at::kChar: case at::kByte: case at::kBool: case at::kUInt16: case at::kUInt32:
    case at::kUInt64: case at::kFloat8_e4m3fn: case at::kFloat8_e5m2:
      break;
    default:
      return false;
  }
  return t.layout() == at::kStrided && !t.is_quantized() && !t.is_nested() && !t.is_meta();
}

// Whether value ``v``'s TensorValue writes its norm as a string (NaN or an infinity),
// what ``keysplice.nonfinite`` finds in the text.
bool nonfinite_norm(const Value& v) {
  if (v.kind == 3) return v.py_without.find("\"norm\":\"") != std::string::npos;
  return v.f32 ? !std::isfinite(static_cast<float>(v.norm)) : !std::isfinite(v.norm);
}

// ([(key, offset, tensor or None, bytes, class, reason or None)], first event index whose
// gradient in or out is not finite, or -1): ``PyCore.event_candidates``, from the offsets the
// last ``events_json`` wrote. ``acc``: the AccumulateGrad nodes' indices (their grad_outputs
// are the leaves' gradients).
// ``sink``: the rows go there instead (``KeptFile::events``), and none comes back.
py::tuple event_candidates(Core& c, const std::vector<int32_t>& acc, KeptRows* sink = nullptr) {
  CoreLock lock(c.mu);
  if (c.ref_at.size() != c.refs.size() || c.grad_at.size() != c.events.size()) {
    throw std::runtime_error("tensor keys: the events were not written");
  }
  std::unordered_set<int32_t> accs(acc.begin(), acc.end());
  if (sink) sink->reserve(sink->size() + c.refs.size() + c.events.size());  // a row per value met, as a rule
  struct Seen { py::object tensor; at::Tensor t; int64_t nbytes; const char* reason; bool done = false; };
  std::vector<Seen> seen(c.values.size());
  py::list rows;
  py::object none = py::none();
  auto row = [&](const std::string& key, int64_t at, int32_t id, int rank) {
    if (id == kNone) return;
    if (at < 0) throw std::runtime_error("tensor keys: a value of the events has no place for its key");
    Seen& s = seen[static_cast<size_t>(id)];
    if (!s.done) {
      s.done = true;
      const Value& v = c.values[static_cast<size_t>(id)];
      const at::Tensor& t = v.kept;
      s.tensor = none;
      if (!t.defined()) {
        s.nbytes = std::max<int64_t>(v.kept_dropped, 0);
        s.reason = v.kept_dropped > 0 ? "budget"  // NOTE [held within the budget]
                   : v.kept_dropped == kKeptTransform ? "transform" : "dtype";
      } else {
        int64_t raw = t.layout() == at::kStrided && !t.is_nested()
                          ? static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size()) : 0;
        s.nbytes = raw;
        if (!v.kept_copy && c.version_of(t) != v.kept_version) {
          s.reason = "changed";
        } else if (!storable(t)) {
          s.reason = "dtype";
        } else {
          s.reason = nullptr;
          if (sink) s.t = t;
          else s.tensor = py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
        }
      }
    }
    if (sink) {
      sink->push_back({key, s.t, s.nbytes, rank, s.reason ? s.reason : "", at});
      return;
    }
    rows.append(py::make_tuple(key, at, s.tensor, s.nbytes, rank,
                               s.reason ? py::object(py::str(s.reason)) : none));
  };
  int64_t first = -1;
  std::string e, key;
  for (size_t i = 0; i < c.events.size(); ++i) {
    const Event& ev = c.events[i];
    if (ev.pass < 0) continue;
    e = "e" + std::to_string(i) + ".";
    int go_rank = accs.count(ev.node) ? kRankLeaf : kRankGradient;
    for (int32_t k = 0; k < ev.go_n; ++k) {
      size_t r = static_cast<size_t>(ev.go_begin + k);
      row(e + "go" + std::to_string(k), c.ref_at[r], c.refs[r], go_rank);
    }
    for (int32_t k = 0; k < ev.gi_n; ++k) {
      size_t r = static_cast<size_t>(ev.gi_begin + k);
      row(e + "gi" + std::to_string(k), c.ref_at[r], c.refs[r], kRankGradient);
    }
    row(e + "grad", c.grad_at[i], ev.grad, kRankLeaf);
    for (int32_t k = 0; k < ev.hc_n; ++k) {
      size_t b = static_cast<size_t>(ev.hc_begin + 2 * k);
      row(e + "hb" + std::to_string(k), c.ref_at[b], c.refs[b], kRankGradient);
      row(e + "ha" + std::to_string(k), c.ref_at[b + 1], c.refs[b + 1], kRankGradient);
    }
    if (first < 0) {
      auto bad = [&](int32_t begin, int32_t n) {
        for (int32_t k = 0; k < n; ++k) {
          int32_t id = c.refs[static_cast<size_t>(begin + k)];
          if (id != kNone && nonfinite_norm(c.values[static_cast<size_t>(id)])) return true;
        }
        return false;
      };
      if (bad(ev.go_begin, ev.go_n) || bad(ev.gi_begin, ev.gi_n)) first = static_cast<int64_t>(i);
    }
  }
  return py::make_tuple(rows, first);
}

// The safetensors code of a kept tensor's dtype (``tensorfile._CODES``).
const char* safetensors_code(at::ScalarType t) {
  switch (t) {
    case at::kDouble: return "F64";
    case at::kFloat: return "F32";
    case at::kHalf: return "F16";
    case at::kBFloat16: return "BF16";
    case at::kLong: return "I64";
    case at::kInt: return "I32";
    case at::kShort: return "I16";
    case at::kChar: return "I8";
    case at::kByte: return "U8";
    case at::kBool: return "BOOL";
    case at::kUInt16: return "U16";
    case at::kUInt32: return "U32";
    case at::kUInt64: return "U64";
    case at::kFloat8_e4m3fn: return "F8_E4M3";
    case at::kFloat8_e5m2: return "F8_E5M2";
    default: throw std::runtime_error("tensor file: a dtype safetensors has no code for");
  }
}

// One entry of a safetensors header, ``,"key":{"dtype":"F32","shape":[...],"data_offsets":[b,e]}``:
// ``write_keyed_file`` below and ``KeptFile::build`` (cxx/keptfile.h) write it the same way.
void append_header_entry(std::string& head, std::string_view key, const char* code, const at::Tensor& t,
                         int64_t begin, int64_t end) {
  head.push_back(',');
  write_str(head, key);
  head += ":{\"dtype\":\"";
  head += code;
  head += "\",\"shape\":[";
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d) head.push_back(',');
    format_int(head, t.size(d));
  }
  head += "],\"data_offsets\":[";
  format_int(head, begin);
  head.push_back(',');
  format_int(head, end);
  head += "]}";
}

// ``src`` with ``"key":"…",`` at each (offset, key) of ``at`` (any order), straight into a new
// ``bytes``.
py::bytes spliced_at(const char* src, size_t size, std::vector<std::pair<size_t, std::string_view>>& at) {
  std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // written straight into the result (its size known first): the events' megabytes copied once
  constexpr std::string_view open = "\"key\":\"", close = "\",";
  size_t total = size;
  for (const auto& [o, k] : at) total += open.size() + k.size() + close.size();
  PyObject* result = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(total));
  if (result == nullptr) throw py::error_already_set();
  char* out = PyBytes_AS_STRING(result);
  auto put = [&out](const char* p, size_t n) {
    std::memcpy(out, p, n);
    out += n;
  };
  size_t from = 0;
  for (const auto& [o, k] : at) {
    put(src + from, o - from);
    put(open.data(), open.size());
    put(k.data(), k.size());
    put(close.data(), close.size());
    from = o;
  }
  put(src + from, size - from);
  return py::reinterpret_steal<py::bytes>(result);
}

// Where ``keysplice.keyed`` puts a TensorValue's ``"key":"…",``: right after its opening
// ``{"dtype":"…",`` (``tv``: its canonical JSON).
size_t keyed_at(std::string_view tv) {
  constexpr std::string_view open = "{\"dtype\":\"";
  size_t at = 1;
  if (tv.substr(0, open.size()) == open) {
    size_t q = tv.find("\",", 10);
    at = q == std::string_view::npos ? 1 : q + 2;
  }
  if (at < 12 || tv.substr(10, at - 12).find('"') != std::string_view::npos) {
    throw std::runtime_error("tensor keys: a TensorValue that does not open with its dtype");
  }
  return at;
}

// ``keysplice.keyed``: ``tv`` with its ``key`` (``keyed_at``), appended to ``out``.
void append_keyed(std::string& out, std::string_view tv, std::string_view key) {
  size_t at = keyed_at(tv);
  out.append(tv.substr(0, at));
  out += "\"key\":\"";
  out += key;
  out += "\",";
  out.append(tv.substr(at));
}

std::string_view bytes_view(PyObject* b) {
  if (!PyBytes_Check(b)) throw std::runtime_error("tensor keys: a TensorValue text that is not bytes");
  return std::string_view(PyBytes_AS_STRING(b), static_cast<size_t>(PyBytes_GET_SIZE(b)));
}

// ``tensorfile.write`` with its header written here (NOTE [the tensor file's side in bulk]):
// the same bytes as ``orjson.dumps`` of the header dict (the metadata, then each key in
// ``keys``' order), padded with spaces to 8 bytes, then the buffers (NOTE [the file written
// once] in tensorfile.h). ``nbytes``: each tensor's bytes. ``ts`` is emptied as it is read,
// and the writer lets go of each tensor once its bytes are in the file. ``index`` (a dict, or
// None): filled with key -> (safetensors code, shape, begin, end), the offsets into the
// file's bytes (NOTE [the index the writer knows] in capture/tensorfile.py).
py::object write_keyed_file(const py::list& keys, const py::list& ts,
                            const std::vector<int64_t>& nbytes, const py::object& index) {
  if (keys.size() != ts.size() || ts.size() != nbytes.size()) throw std::runtime_error("tensor file: lengths differ");
  std::string head(8, '\0');
  head.reserve(64 + keys.size() * 80);
  head += "{\"__metadata__\":{\"format\":\"pt\",\"writer\":\"gradtrace\"}";
  int64_t offset = 0;
  py::list parts;
  const bool indexed = !index.is_none();
  std::vector<std::pair<const char*, py::tuple>> found;  // each key's code and shape, for ``index``
  if (indexed) found.reserve(ts.size());
  std::unordered_map<std::string, py::tuple> shapes;
  // NOTE [the index the writer knows]: no collection while thousands of its tuples are made
  // (each would scan the young objects, none of them garbage)
  const bool collecting = indexed && PyGC_Disable();
  struct Collect {
    bool on;
    ~Collect() { if (on) PyGC_Enable(); }
  } collect_again{collecting};
  PyObject* items = ts.ptr();
  for (size_t i = 0; i < ts.size(); ++i) {
    PyObject* item = PyList_GET_ITEM(items, static_cast<Py_ssize_t>(i));
    if (!THPVariable_Check(item)) throw std::runtime_error("tensor file: an item that is not a tensor");
    const at::Tensor& t = THPVariable_Unpack(item);
    const char* code = safetensors_code(t.scalar_type());
    if (indexed) {  // one tuple per distinct shape (thousands of gradients share a few)
      std::string_view dims(reinterpret_cast<const char*>(t.sizes().data()), t.sizes().size() * sizeof(int64_t));
      auto [it, fresh] = shapes.try_emplace(std::string(dims));
      if (fresh) {
        py::tuple shape(t.dim());
        for (int64_t d = 0; d < t.dim(); ++d) {
          PyObject* n = PyLong_FromLongLong(t.size(d));
          if (n == nullptr) throw py::error_already_set();
          PyTuple_SET_ITEM(shape.ptr(), d, n);  // a fresh tuple's item: the reference is handed over
        }
        it->second = std::move(shape);
      }
      found.emplace_back(code, it->second);
    }
    Py_ssize_t kn = 0;
    const char* kp = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(keys.ptr(), static_cast<Py_ssize_t>(i)), &kn);
    if (kp == nullptr) throw py::error_already_set();
    append_header_entry(head, std::string_view(kp, static_cast<size_t>(kn)), code, t, offset, offset + nbytes[i]);
    offset += nbytes[i];
    if (nbytes[i]) parts.append(item);
  }
  // ``parts`` is their one holder now (NOTE [each tensor let go once written])
  if (PyList_SetSlice(items, 0, PyList_GET_SIZE(items), nullptr) != 0) throw py::error_already_set();
  head.push_back('}');
  head.append((8 - (head.size() - 8) % 8) % 8, ' ');
  uint64_t n = head.size() - 8;
  for (int b = 0; b < 8; ++b) head[static_cast<size_t>(b)] = static_cast<char>((n >> (8 * b)) & 0xff);
  if (indexed) {  // the C API: thousands of entries, pybind's accessors cost as much again
    PyObject* into = index.ptr();
    if (!PyDict_Check(into)) throw std::runtime_error("tensor file: the index is not a dict");
    std::map<std::string_view, py::str> codes;  // one str per code
    int64_t at_ = static_cast<int64_t>(head.size());
    // one int per offset: a tensor's end is the next one's begin (the same object)
    py::object end = py::reinterpret_steal<py::object>(PyLong_FromLongLong(at_));
    if (!end) throw py::error_already_set();
    for (size_t i = 0; i < found.size(); ++i) {
      auto [it, fresh] = codes.try_emplace(found[i].first);
      if (fresh) it->second = py::str(found[i].first);
      PyObject* key = PyList_GET_ITEM(keys.ptr(), static_cast<Py_ssize_t>(i));  // the caller's str
      py::object begin = end;
      if (nbytes[i]) end = py::reinterpret_steal<py::object>(PyLong_FromLongLong(at_ + nbytes[i]));
      if (!end) throw py::error_already_set();
      py::object entry = py::reinterpret_steal<py::object>(
          PyTuple_Pack(4, it->second.ptr(), found[i].second.ptr(), begin.ptr(), end.ptr()));
      if (!entry || PyDict_SetItem(into, key, entry.ptr()) != 0) throw py::error_already_set();
      at_ += nbytes[i];
    }
  }
  return write_tensor_file(py::bytes(head), parts, offset);
}

}  // namespace gradtrace
