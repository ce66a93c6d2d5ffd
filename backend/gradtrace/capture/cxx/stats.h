// gradtrace capture core: the tensor file's side of the document, in bulk
// (capture/tensordoc.py; ``PyCore.stats_json`` and ``PyCore.event_candidates`` are the twins).
// (one translation unit: ``_native.cpp`` includes every part in order)
//
// NOTE [the tensor file's side in bulk]
//     A run keeps thousands of tensors (GRU-200: ~4,000 forward outputs, ~12,000 gradient
//     references). Asking the core for each one's stats, then for each kept gradient's tensor
//     and version, one Python call at a time, cost more than the file itself. Here the forward
//     outputs' stats are written in one call, and every backward value's candidate row for the
//     file (its key, where the key goes in the events' JSON as ``events_json`` wrote it, the
//     tensor, its bytes, its class and why it cannot be kept) comes back from one call, with
//     the first backward event whose flowing gradient is not finite.
#pragma once
#include "prelude.h"

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

// The file's classes (``tensorfile.LEAF``, ``GRADIENT``: NOTE [what the budget keeps first]).
constexpr int kRankLeaf = 0, kRankGradient = 2;

// ``tensorfile.storable`` for a kept alias (never a subclass or a transform's wrapper:
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
py::tuple event_candidates(Core& c, const std::vector<int32_t>& acc) {
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.ref_at.size() != c.refs.size() || c.grad_at.size() != c.events.size()) {
    throw std::runtime_error("tensor keys: the events were not written");
  }
  std::unordered_set<int32_t> accs(acc.begin(), acc.end());
  struct Seen { py::object tensor; int64_t nbytes; const char* reason; bool done = false; };
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
        s.nbytes = v.kept_dropped;
        s.reason = v.kept_dropped ? "budget" : "dtype";  // NOTE [held within the budget]
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
          s.tensor = py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
        }
      }
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

}  // namespace gradtrace
