// gradtrace capture core: the tensor file chosen, written and indexed in one place, on the
// core's kernels (``tensordoc.attach``; its Python twin is ``tensorfile.build`` over
// ``candidates.Candidate`` rows, the same file and document).
//
// NOTE [the kept file in one place]
//     A run keeps thousands of tensors, most of them a few bytes (GRU-200: 13,000, 10,000 of
//     them 64 bytes), so what the document step costs per tensor is bookkeeping, not bytes:
//     a Python tuple per candidate, a ``Candidate`` object, a sort of them, a Python wrapper per
//     tensor, an index tuple per key, a dict lookup per key spliced. Here every candidate is a
//     ``KeptRow`` (key, tensor, bytes, class, reason, its place in the events' JSON): the
//     events' and the tap's rows are made by the core itself (``event_candidates`` /
//     ``tap_outputs`` with a sink, ``cxx/stats.h``), the few Python has (leaves' values and
//     ``.grad`` history, saved tensors, odd tensors) are added one call each. ``build`` then
//     chooses by class and budget exactly as ``tensorfile.select`` does, lets the other holders
//     go (``release``), writes the header and each tensor's bytes into the file's final
//     ``bytes`` (NOTE [the file written once] in ``cxx/tensorfile.h``), letting each go once
//     written, and keeps the index in C++: a kept key's (code, shape, begin, end) tuple is made
//     only when asked (``get``), and the events' keys and the outputs' are spliced from here
//     with no Python object per key (NOTE [keys spliced into the core's JSON] in keysplice.py).
#pragma once
#include "prelude.h"

#include <numeric>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gradtrace {

class KeptFile {
 public:
  // ``tensordoc._Collect``'s candidate: ``t`` None or a tensor, ``reason`` None or a str.
  void add(const std::string& key, const py::object& t, int64_t nbytes, int rank, const py::object& reason) {
    frozen_check();
    at::Tensor tensor;
    if (!t.is_none()) {
      if (!THPVariable_Check(t.ptr())) throw std::runtime_error("tensor file: a candidate that is not a tensor");
      tensor = THPVariable_Unpack(t.ptr());
    }
    rows_.push_back({key, tensor, nbytes, rank, reason.is_none() ? "" : py::cast<std::string>(reason)});
  }

  // Every backward value's row (``event_candidates``); the first event whose flowing gradient
  // is not finite, or -1.
  int64_t events(Core& c, const std::vector<int32_t>& acc) {
    frozen_check();
    return event_candidates(c, acc, &rows_)[1].cast<int64_t>();
  }

  // The tap's outputs (``tap_outputs``): (nodes, odd), ``nodes``' row bounds positions here.
  py::tuple outputs(Core& c, Tap* tap, const std::vector<FnEntry>& entries, const std::vector<int64_t>& pos) {
    frozen_check();
    py::tuple got = tap_outputs(c, tap, entries, pos, &rows_);
    return py::make_tuple(got[0], got[2]);
  }

  size_t size() const { return rows_.size(); }

  // Rows [a, b) of each span dropped (spans in order, not overlapping): the outputs of a node
  // that is not a function node.
  void drop(const std::vector<std::pair<int64_t, int64_t>>& spans) {
    frozen_check();
    std::vector<bool> gone(rows_.size(), false);
    for (auto [a, b] : spans) {
      for (int64_t i = std::max<int64_t>(a, 0); i < b && i < static_cast<int64_t>(rows_.size()); ++i) gone[static_cast<size_t>(i)] = true;
    }
    size_t w = 0;
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (!gone[i]) rows_[w++] = std::move(rows_[i]);
    }
    rows_.resize(w);
  }

  // NOTE [what the budget keeps first] in capture/tensorfile.py: each row whose key is in
  // ``keys`` or opens with one of ``prefixes`` moves up to the path to the first non-finite value.
  void promote(const std::vector<std::string>& keys, const std::vector<std::string>& prefixes, int rank) {
    frozen_check();
    std::unordered_map<std::string_view, bool> in;
    for (const std::string& k : keys) in.emplace(k, true);
    for (KeptRow& r : rows_) {
      if (r.rank <= rank) continue;
      bool hit = in.count(r.key) > 0;
      for (size_t p = 0; !hit && p < prefixes.size(); ++p) hit = r.key.compare(0, prefixes[p].size(), prefixes[p]) == 0;
      if (hit) r.rank = rank;
    }
  }

  // ``tensorfile.build``'s choice and write: (file bytes, the first ``listed`` left out as
  // (key, bytes, reason), how many were kept, how many left out and their bytes).
  py::tuple build(int64_t budget, const py::object& release, size_t listed) {
    frozen_check();
    frozen_ = true;
    std::vector<int32_t> order(rows_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](int32_t a, int32_t b) { return rows_[a].rank < rows_[b].rank; });
    int64_t total = 0;
    for (const KeptRow& r : rows_) {
      if (r.reason.empty()) total += r.nbytes;
    }
    std::vector<int32_t> out;
    int64_t used = 0;
    int full = -1;  // the class where the budget first ran short: none after it
    for (int32_t i : order) {
      KeptRow& r = rows_[static_cast<size_t>(i)];
      if (!r.reason.empty()) {
        out.push_back(i);
      } else if (total > budget && (used + r.nbytes > budget || (full >= 0 && r.rank > full))) {
        r.reason = "budget";
        out.push_back(i);
        if (full < 0) full = r.rank;
      } else {
        used += r.nbytes;
        r.kept = true;
        order_.push_back(i);
      }
    }
    for (int32_t i : out) rows_[static_cast<size_t>(i)].tensor = at::Tensor();
    if (!release.is_none()) release();  // NOTE [each tensor let go once written]
    py::list left;
    int64_t out_bytes = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const KeptRow& r = rows_[static_cast<size_t>(out[k])];
      out_bytes += r.nbytes;
      if (k < listed) left.append(py::make_tuple(r.key, r.nbytes, r.reason));
    }
    py::object data = write();
    return py::make_tuple(data, left, order_.size(), out.size(), out_bytes);
  }

  // The index (NOTE [the index the writer knows] in capture/tensorfile.py), read by key.
  bool contains(std::string_view key) const { return find(key) >= 0; }

  py::object get(const std::string& key, const py::object& otherwise) const {
    int32_t k = find(key);
    if (k < 0) return otherwise;
    const Entry& e = entries_[static_cast<size_t>(k)];
    py::tuple shape(e.dims);
    for (int32_t d = 0; d < e.dims; ++d) shape[static_cast<size_t>(d)] = py::int_(shapes_[static_cast<size_t>(e.shape + d)]);
    return py::make_tuple(py::str(e.code), shape, e.begin, e.end);
  }

  py::list keys() const {
    py::list out;
    for (int32_t i : order_) out.append(py::str(rows_[static_cast<size_t>(i)].key));
    return out;
  }

  size_t count() const { return order_.size(); }

  // ``splice_keys``: the events' JSON with each kept backward value's key in place.
  py::bytes splice_events(const py::bytes& text) const {
    const char* src = PyBytes_AS_STRING(text.ptr());
    size_t size = static_cast<size_t>(PyBytes_GET_SIZE(text.ptr()));
    std::vector<std::pair<size_t, std::string_view>> at;
    for (const KeptRow& r : rows_) {
      if (r.at < 0 || !r.kept) continue;
      if (static_cast<size_t>(r.at) > size) throw std::runtime_error("tensor keys: an offset past the events");
      at.emplace_back(static_cast<size_t>(r.at), r.key);
    }
    return spliced_at(src, size, at);
  }

  // ``splice_outputs`` with what this file holds.
  py::bytes splice_outputs(const py::bytes& text, const py::list& own, const py::list& outputs) const {
    return splice_outputs_by(text, own, outputs, [this](PyObject* key) {
      Py_ssize_t n = 0;
      const char* p = PyUnicode_AsUTF8AndSize(key, &n);
      if (p == nullptr) throw py::error_already_set();
      return contains(std::string_view(p, static_cast<size_t>(n)));
    });
  }

 private:
  struct Entry {
    const char* code;
    int64_t shape;  // where its dims start in ``shapes_``
    int32_t dims;
    int64_t begin, end;
  };

  // The kept entry of ``key``, or -1: an open-addressed table over ``entries_`` (``slots_``,
  // a power of two at least twice their number), no allocation per key.
  int32_t find(std::string_view key) const {
    if (slots_.empty()) return -1;
    size_t mask = slots_.size() - 1;
    for (size_t h = std::hash<std::string_view>{}(key) & mask;; h = (h + 1) & mask) {
      int32_t k = slots_[h];
      if (k < 0) return -1;
      if (rows_[static_cast<size_t>(order_[static_cast<size_t>(k)])].key == key) return k;
    }
  }

  void index_keys() {
    size_t n = 8;
    while (n < 2 * order_.size()) n <<= 1;
    slots_.assign(n, -1);
    size_t mask = n - 1;
    for (size_t k = 0; k < order_.size(); ++k) {
      const std::string& key = rows_[static_cast<size_t>(order_[k])].key;
      size_t h = std::hash<std::string_view>{}(key) & mask;
      while (slots_[h] >= 0 && rows_[static_cast<size_t>(order_[static_cast<size_t>(slots_[h])])].key != key) {
        h = (h + 1) & mask;
      }
      slots_[h] = static_cast<int32_t>(k);  // a key met twice: the last, as a dict's
    }
  }

  void frozen_check() const {
    if (frozen_) throw std::runtime_error("tensor file: already written");
  }

  // ``write_keyed_file``'s bytes for the kept rows, in ``order_``; each row's tensor let go once
  // its bytes are in the file.
  py::object write() {
    std::string head(8, '\0');
    head.reserve(64 + order_.size() * 80);
    head += "{\"__metadata__\":{\"format\":\"pt\",\"writer\":\"gradtrace\"}";
    entries_.reserve(order_.size());
    shapes_.reserve(order_.size() * 2);
    int64_t offset = 0;
    for (int32_t i : order_) {
      const KeptRow& r = rows_[static_cast<size_t>(i)];
      const at::Tensor& t = r.tensor;
      if (!t.defined()) throw std::runtime_error("tensor file: a kept row without its tensor");
      const char* code = safetensors_code(t.scalar_type());
      head.push_back(',');
      write_str(head, r.key);
      head += ":{\"dtype\":\"";
      head += code;
      head += "\",\"shape\":[";
      for (int64_t d = 0; d < t.dim(); ++d) {
        if (d) head.push_back(',');
        format_int(head, t.size(d));
      }
      head += "],\"data_offsets\":[";
      format_int(head, offset);
      head.push_back(',');
      format_int(head, offset + r.nbytes);
      head += "]}";
      entries_.push_back({code, static_cast<int64_t>(shapes_.size()), static_cast<int32_t>(t.dim()), offset,
                          offset + r.nbytes});
      shapes_.insert(shapes_.end(), t.sizes().begin(), t.sizes().end());
      offset += r.nbytes;
    }
    head.push_back('}');
    head.append((8 - (head.size() - 8) % 8) % 8, ' ');
    uint64_t hn = head.size() - 8;
    for (int b = 0; b < 8; ++b) head[static_cast<size_t>(b)] = static_cast<char>((hn >> (8 * b)) & 0xff);
    const int64_t start = static_cast<int64_t>(head.size());
    for (Entry& e : entries_) {
      e.begin += start;
      e.end += start;
    }
    index_keys();
    PyObject* out = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(start + offset));
    if (out == nullptr) throw py::error_already_set();
    char* dst = PyBytes_AS_STRING(out);
    std::memcpy(dst, head.data(), head.size());
    int64_t off = 0, trimmed = 0;
    try {
      c10::impl::ExcludeDispatchKeyGuard no_tap(kTapKey);
      at::AutoDispatchBelowADInplaceOrView below;  // plain copies: no node, no version bump
      for (int32_t i : order_) {
        KeptRow& r = rows_[static_cast<size_t>(i)];
        int64_t n = static_cast<int64_t>(r.tensor.numel()) * static_cast<int64_t>(r.tensor.element_size());
        if (n != r.nbytes) throw std::runtime_error("tensor file: a tensor's size is not its row's");
        copy_into(dst + start + off, r.tensor, n);
        off += n;
        r.tensor = at::Tensor();  // written: let go (the tensor's last holder, as a rule)
#if defined(__GLIBC__)
        if (off - trimmed >= kTrimEvery) {  // what was let go goes back to the system
          malloc_trim(0);
          trimmed = off;
        }
#endif
      }
    } catch (...) {
      Py_DECREF(out);
      throw;
    }
    return py::reinterpret_steal<py::object>(out);
  }

  KeptRows rows_;
  std::vector<int32_t> order_;  // the kept rows, in the file's order
  std::vector<Entry> entries_;  // each kept row's index entry, in the file's order
  std::vector<int64_t> shapes_;  // the entries' dims, one after another
  std::vector<int32_t> slots_;  // ``find``'s table: an entry, or -1
  bool frozen_ = false;
};

}  // namespace gradtrace
