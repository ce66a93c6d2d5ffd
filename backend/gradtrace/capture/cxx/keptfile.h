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
//     events' rows are made by the core itself (``event_candidates`` with a sink,
//     ``cxx/stats.h``), the tap's outputs' rows, stats texts and keys here (``outputs``), the
//     few Python has (leaves' values and
//     ``.grad`` history, saved tensors, odd tensors) are added one call each. ``build`` then
//     chooses by class and budget exactly as ``tensorfile.select`` does, lets the other holders
//     go (``release``), writes the header and each tensor's bytes into the file's final
//     ``bytes`` (NOTE [the file written once] in ``cxx/tensorfile.h``), letting each go once
//     written, and keeps the index in C++: a kept key's (code, shape, begin, end) tuple is made
//     only when asked (``get``), and the events' keys and the outputs' are spliced from here
//     with no Python object per key (NOTE [keys spliced into the core's JSON] in keysplice.py).
#pragma once
#include "prelude.h"

#include <functional>
#include <numeric>
#include <map>
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

  // The forward outputs the tap holds (``tensordoc._outputs`` on the twin), kept here: each output's row, and for
  // each node that holds one its outputs' TensorValue texts and keys (``Outs``). Back: the
  // indices of those nodes and of those with outputs past the budget only, in node order, and
  // the odd tensors [(position among the nodes with an output held, output, tensor)] whose text only Python's encoder writes (``set_text``).
  py::tuple outputs(Core& c, Tap* tap, const std::vector<FnEntry>& entries, const std::vector<int64_t>& pos) {
    frozen_check();
    py::list nodes, odd;
    if (tap == nullptr) return py::make_tuple(nodes, odd);
    // NOTE [the tap's outputs grouped by node in one pass]
    //     GRU-200's tap holds 13,000 entries under 3,200 nodes. They are grouped by node index
    //     with a counting sort into one array (the entries of a node in the order the tap held
    //     them, so each output's first entry is the one written), not a tree of a vector per
    //     node; a node's lookup in ``Core::known`` is reused by the entries after it (a node's
    //     outputs are held together). Each text's room is reserved once, and its stats are
    //     read without a copy of the values (NOTE [stats of a small tensor without its values]
    //     in cxx/values.h).
    const size_t n_nodes = pos.size();
    std::vector<int32_t> index_of(tap->entries.size(), -1);
    std::vector<int32_t> first(n_nodes + 1, 0);  // per node: where its entries start in ``grouped``
    {
      CoreLock lock(c.mu);
      const Node* last = nullptr;
      int32_t last_index = -1;
      for (size_t i = 0; i < tap->entries.size(); ++i) {
        const Node* node = tap->entries[i].node.get();
        if (node != last || i == 0) {
          auto it = c.known.find(const_cast<Node*>(node));
          last = node;
          last_index = it == c.known.end() ? -1 : it->second;
        }
        if (last_index < 0 || static_cast<size_t>(last_index) >= n_nodes || pos[static_cast<size_t>(last_index)] < 0) continue;
        index_of[i] = last_index;
        ++first[static_cast<size_t>(last_index) + 1];
      }
    }
    for (size_t k = 0; k < n_nodes; ++k) first[k + 1] += first[k];
    std::vector<const TapEntry*> grouped(static_cast<size_t>(first[n_nodes]));
    {
      std::vector<int32_t> fill(first.begin(), first.end() - 1);
      for (size_t i = 0; i < tap->entries.size(); ++i) {
        if (index_of[i] >= 0) grouped[static_cast<size_t>(fill[static_cast<size_t>(index_of[i])]++)] = &tap->entries[i];
      }
    }
    rows_.reserve(rows_.size() + grouped.size());
    std::vector<const TapEntry*> slot;
    std::string key;
    size_t n_any = 0;  // the nodes so far with an output held (``set_text``'s positions)
    for (size_t index = 0; index < n_nodes; ++index) {
      if (first[index] == first[index + 1]) continue;
      size_t n_out = std::max<size_t>(1, entries[static_cast<size_t>(pos[index])].outs.size());
      slot.assign(n_out, nullptr);
      for (int32_t g = first[index]; g < first[index + 1]; ++g) {  // the first entry of each output
        const TapEntry* e = grouped[static_cast<size_t>(g)];
        if (e->nr >= 0 && static_cast<size_t>(e->nr) < n_out && slot[static_cast<size_t>(e->nr)] == nullptr) {
          slot[static_cast<size_t>(e->nr)] = e;
        }
      }
      Outs o{static_cast<int32_t>(index), static_cast<int32_t>(n_out), texts_.size(), rows_.size(), 0, false};
      texts_.resize(texts_.size() + n_out);
      has_.resize(has_.size() + n_out, false);
      // NOTE [keys spliced into the core's JSON] in keysplice.py: the key made here
      std::string prefix = "n" + std::to_string(index) + ".out";
      for (size_t k = 0; k < n_out; ++k) {
        const TapEntry* e = slot[k];
        if (e == nullptr) continue;
        key = prefix;
        key += std::to_string(k);
        if (!e->tensor.defined()) {
          rows_.push_back({std::move(key), at::Tensor(), e->dropped, kRankForward, "budget"});
          continue;
        }
        const at::Tensor& t = e->tensor;
        bool intact = e->copied || Tap::version_of(t) == e->version;
        int64_t raw = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
        Value v = encode(t, false);  // written without values
        std::string& text = texts_[o.text + k];
        if (v.kind != 3) {
          text.reserve(kOutputTextRoom);
          write_value(text, v, false);
        } else {
          odd.append(py::make_tuple(n_any, k, py::reinterpret_steal<py::object>(THPVariable_Wrap(t))));
        }
        has_[o.text + k] = true;
        const char* why = !intact ? "changed" : !storable(t) ? "dtype" : "";
        rows_.push_back({std::move(key), *why ? at::Tensor() : t, raw, kRankForward, why});
        o.any = true;
      }
      o.row_end = rows_.size();
      n_any += o.any;
      nodes.append(index);
      outs_.push_back(o);  // one with only outputs past the budget: its rows, no texts
    }
    return py::make_tuple(nodes, odd);
  }
  // A TensorValue without values of up to 4 dimensions fits (dtype, shape, four stats).
  static constexpr size_t kOutputTextRoom = 192;

  // Output ``k`` of the ``at``-th node ``outputs`` gave back: ``text``, Python's encoder's.
  void set_text(size_t at, size_t k, const py::bytes& text) {
    Outs& o = with_texts(at);
    if (k >= static_cast<size_t>(o.n)) throw std::runtime_error("tensor keys: no such output");
    texts_[o.text + k] = std::string(bytes_view(text.ptr()));
  }

  // The nodes of ``indices`` are no function nodes: their outputs are not the file's (their
  // rows dropped) nor the document's.
  void drop_nodes(const std::vector<int32_t>& indices) {
    frozen_check();
    std::vector<std::pair<int64_t, int64_t>> spans;
    std::vector<Outs> left;
    for (const Outs& o : outs_) {
      if (std::find(indices.begin(), indices.end(), o.index) != indices.end()) {
        spans.emplace_back(static_cast<int64_t>(o.row), static_cast<int64_t>(o.row_end));
      } else {
        left.push_back(o);
      }
    }
    outs_ = std::move(left);  // their rows are not read again: only dropped here, once
    drop(spans);
  }

  // NOTE [the graph's nodes found once]
  //     ``GraphText`` (keysplice.py) wants each node's start, id and kind and where the
  //     AccumulateGrad nodes are. Its regular expressions over the graph's megabytes, with a
  //     Python object per match, cost more than splicing the outputs in; here one pass finds
  //     the same matches (``keysplice._scan``: each ``{"created_in_pass":``, each
  //     ``,"id":"n<digits>","kind":"<a-z>"``, each ``,"name":"AccumulateGrad",``, all after
  //     ``],"nodes":[``) and keeps each node's span and kind, so that the outputs find their
  //     nodes here by index (``not_functions``, ``own_outputs``, ``splice_graph``) with no key
  //     string per node in Python. Back: ``keysplice.GraphIndex``.
  py::tuple index_graph(const py::bytes& text) {
    std::string_view src = bytes_view(text.ptr());
    constexpr std::string_view nodes_open = "],\"nodes\":[", node_open = "{\"created_in_pass\":",
                               id_open = ",\"id\":\"", kind_open = "\",\"kind\":\"",
                               acc_name = ",\"name\":\"AccumulateGrad\",";
    size_t nodes_at = src.find(nodes_open);
    if (nodes_at == std::string_view::npos) throw std::runtime_error("tensor keys: a graph without its nodes");
    nodes_at += nodes_open.size();
    graph_size_ = src.size();
    node_start_.clear();
    const Finder find_node(node_open), find_id(id_open), find_acc(acc_name);
    for (size_t at = find_node(src, nodes_at); at != std::string_view::npos; at = find_node(src, at + find_node.size())) {
      node_start_.push_back(static_cast<int64_t>(at));
    }
    py::list starts, ids, kinds, acc;
    for (int64_t at : node_start_) starts.append(py::int_(at));
    node_fn_.clear();
    node_k_.clear();
    std::map<std::string_view, py::str> kind_strs;  // one str per kind
    for (size_t at = find_id(src, nodes_at); at != std::string_view::npos;) {
      size_t p = at + id_open.size(), digits = 0, kind = 0;
      if (p < src.size() && src[p] == 'n') {
        while (p + 1 + digits < src.size() && src[p + 1 + digits] >= '0' && src[p + 1 + digits] <= '9') ++digits;
      }
      size_t k0 = p + 1 + digits + kind_open.size();
      if (digits && src.substr(p + 1 + digits, kind_open.size()) == kind_open) {
        while (k0 + kind < src.size() && src[k0 + kind] >= 'a' && src[k0 + kind] <= 'z') ++kind;
      }
      if (!kind || k0 + kind >= src.size() || src[k0 + kind] != '"') {  // no match here: on from the next byte
        at = find_id(src, at + 1);
        continue;
      }
      std::string_view id = src.substr(p, 1 + digits), name = src.substr(k0, kind);
      node_id(id, static_cast<int32_t>(ids.size()));
      ids.append(py::str(id.data(), id.size()));
      auto [it, fresh] = kind_strs.try_emplace(name);
      if (fresh) it->second = py::str(name.data(), name.size());
      kinds.append(it->second);
      node_fn_.push_back(name == "function");
      at = find_id(src, k0 + kind + 1);
    }
    for (size_t at = find_acc(src, nodes_at); at != std::string_view::npos; at = find_acc(src, at + find_acc.size())) {
      acc.append(py::int_(at));
    }
    return py::make_tuple(nodes_at, starts, ids, kinds, acc);
  }

  // The indices of the nodes with outputs here whose node (``index_graph``) is no function node.
  py::list not_functions() const {
    py::list out;
    for (const Outs& o : outs_) {
      int32_t k = node_at(o.index);
      if (k < 0 || !node_fn_[static_cast<size_t>(k)]) out.append(o.index);
    }
    return out;
  }

  // [(at, k)]: each node with an output held (the ``at``-th, as ``output_texts`` counts them)
  // that is Python's own, at place ``k`` among the graph's nodes (``own``: those places).
  py::list own_outputs(const std::vector<int64_t>& own) const {
    py::list out;
    size_t at = 0;
    std::vector<bool> mine = places(own);
    for (const Outs& o : outs_) {
      if (!o.any) continue;
      int64_t k = node_of_output(o);
      if (mine[static_cast<size_t>(k)]) out.append(py::make_tuple(at, k));
      ++at;
    }
    return out;
  }

  // The first node (in creation order) with an output whose norm is not finite, as
  // (index, its outputs), or None (what ``keysplice.nonfinite`` finds in its texts).
  py::object first_nonfinite_output() const {
    for (const Outs& o : outs_) {
      if (!o.any) continue;
      for (int32_t k = 0; k < o.n; ++k) {
        if (has_[o.text + static_cast<size_t>(k)] && texts_[o.text + static_cast<size_t>(k)].find("\"norm\":\"") != std::string::npos) {
          return py::make_tuple(o.index, o.n);
        }
      }
    }
    return py::none();
  }

  // The ``at``-th node's outputs as the document writes them (None for none), each kept one keyed.
  py::list output_texts(size_t at) const {
    const Outs& o = with_texts(at);
    py::list out;
    std::string text;
    for (int32_t k = 0; k < o.n; ++k) {
      size_t i = o.text + static_cast<size_t>(k);
      if (!has_[i]) {
        out.append(py::none());
        continue;
      }
      text.clear();
      put_output(text, o, k);
      out.append(py::bytes(text));
    }
    return out;
  }

  // NOTE [outputs spliced in one pass]
  //     The graph's JSON with every function node's ``,"output":[…]`` spliced in from the texts
  //     kept here, each kept output's text keyed, and Python's own nodes written again, in one
  //     pass: the same bytes as ``GraphText.rewritten`` of ``_Output.json`` at
  //     ``GraphText.output_at`` on the twin. Each node is found where ``index_graph`` found it
  //     in ``text``; ``own``: the places of Python's own nodes (their outputs set in their dicts
  //     instead); ``own_edits``: [(start, end, bytes)], a span replaced. The result is sized
  //     first and written straight into its ``bytes``: the graph's megabytes copied once.
  py::bytes splice_graph(const py::bytes& text, const py::list& own_edits, const std::vector<int64_t>& own) const {
    std::string_view src = bytes_view(text.ptr());
    if (src.size() != graph_size_) throw std::runtime_error("tensor keys: a graph that was not indexed");
    struct Edit { size_t a, b; PyObject* own; const Outs* outs; };
    std::vector<Edit> edits;
    edits.reserve(outs_.size() + own.size());
    size_t total = src.size();
    std::vector<uint8_t> key_len(texts_.size(), 0);  // each kept output's key length (0: none)
    char key[kKeyMax];
    std::vector<bool> mine = places(own);
    for (const Outs& o : outs_) {
      if (!o.any) continue;
      int64_t k = node_of_output(o);
      if (mine[static_cast<size_t>(k)]) continue;
      size_t a = static_cast<size_t>(node_start_[static_cast<size_t>(k)]), b = node_end(static_cast<size_t>(k));
      if (b < a || b > src.size()) throw std::runtime_error("tensor keys: an offset past the graph");
      std::string_view node = src.substr(a, b - a);
      size_t in = node.find(",\"outputs\":");
      if (in == std::string_view::npos) in = node.find(",\"role\":");
      if (in == std::string_view::npos) throw std::runtime_error("tensor keys: a node has no place for its output");
      edits.push_back({a + in, a + in, nullptr, &o});
      total += kOutputOpen.size() + 1 + static_cast<size_t>(o.n - 1);  // ``,"output":[`` … ``]``, commas
      for (int32_t j = 0; j < o.n; ++j) {
        size_t i = o.text + static_cast<size_t>(j);
        if (!has_[i]) {
          total += 4;  // null
          continue;
        }
        size_t n = output_key(key, o.index, j);
        if (contains(std::string_view(key, n))) {
          key_len[i] = static_cast<uint8_t>(n);
          total += kKeyOpen.size() + n + kKeyClose.size();
        }
        total += texts_[i].size();
      }
    }
    for (const py::handle& e : own_edits) {
      if (!PyTuple_Check(e.ptr()) || PyTuple_GET_SIZE(e.ptr()) != 3) throw std::runtime_error("tensor keys: an edit row");
      size_t a = py::cast<size_t>(PyTuple_GET_ITEM(e.ptr(), 0)), b = py::cast<size_t>(PyTuple_GET_ITEM(e.ptr(), 1));
      if (b < a || b > src.size()) throw std::runtime_error("tensor keys: an offset past the graph");
      total += bytes_view(PyTuple_GET_ITEM(e.ptr(), 2)).size();
      total -= b - a;
      edits.push_back({a, b, e.ptr(), nullptr});
    }
    std::stable_sort(edits.begin(), edits.end(), [](const Edit& x, const Edit& y) { return x.a < y.a; });
    PyObject* result = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(total));
    if (result == nullptr) throw py::error_already_set();
    py::bytes owned = py::reinterpret_steal<py::bytes>(result);
    char* out = PyBytes_AS_STRING(result);
    char* const end = out + total;
    auto put = [&out, end](std::string_view part) {
      if (part.size() > static_cast<size_t>(end - out)) throw std::runtime_error("tensor keys: the graph outgrew its size");
      std::memcpy(out, part.data(), part.size());
      out += part.size();
    };
    size_t from = 0;
    for (const Edit& e : edits) {
      if (e.a < from) throw std::runtime_error("tensor keys: edits that overlap");
      put(src.substr(from, e.a - from));
      from = e.b;
      if (e.own != nullptr) {
        put(bytes_view(PyTuple_GET_ITEM(e.own, 2)));
        continue;
      }
      put(kOutputOpen);
      for (int32_t j = 0; j < e.outs->n; ++j) {
        if (j) put(",");
        size_t i = e.outs->text + static_cast<size_t>(j);
        if (!has_[i]) {
          put("null");
          continue;
        }
        std::string_view tv = texts_[i];
        if (!key_len[i]) {
          put(tv);
          continue;
        }
        size_t at = keyed_at(tv);  // NOTE [keys spliced into the core's JSON] in keysplice.py
        put(tv.substr(0, at));
        put(kKeyOpen);
        put(std::string_view(key, output_key(key, e.outs->index, j)));
        put(kKeyClose);
        put(tv.substr(at));
      }
      put("]");
    }
    put(src.substr(from));
    if (out != end) throw std::runtime_error("tensor keys: the graph fell short of its size");
    return owned;
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

  // The events' JSON with each kept backward value's key in place (NOTE [keys spliced into the
  // core's JSON] in keysplice.py; the twin: ``keysplice.spliced`` at ``EventsText``' offsets).
  py::bytes splice_events(const py::bytes& text) const {
    const char* src = PyBytes_AS_STRING(text.ptr());
    size_t size = static_cast<size_t>(PyBytes_GET_SIZE(text.ptr()));
    std::vector<std::pair<size_t, std::string_view>> at;
    at.reserve(order_.size());
    for (const KeptRow& r : rows_) {
      if (r.at < 0 || !r.kept) continue;
      if (static_cast<size_t>(r.at) > size) throw std::runtime_error("tensor keys: an offset past the events");
      at.emplace_back(static_cast<size_t>(r.at), r.key);
    }
    return spliced_at(src, size, at);
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

  // A node's outputs (``outputs``): where its texts start in ``texts_`` / ``has_``, its rows.
  struct Outs {
    int32_t index, n;
    size_t text, row, row_end;
    bool any;  // any output held (else only rows past the budget)
  };

  const Outs& with_texts(size_t at) const {
    for (const Outs& o : outs_) {  // the ``at``-th with texts (asked for a few odd ones only)
      if (o.any && at-- == 0) return o;
    }
    throw std::runtime_error("tensor keys: no such node of outputs");
  }
  Outs& with_texts(size_t at) { return const_cast<Outs&>(static_cast<const KeptFile*>(this)->with_texts(at)); }

  // Output ``k``'s text, keyed where the file holds it.
  void put_output(std::string& out, const Outs& o, int32_t k) const {
    const std::string& text = texts_[o.text + static_cast<size_t>(k)];
    char key[kKeyMax];
    std::string_view name(key, output_key(key, o.index, k));
    if (contains(name)) append_keyed(out, text, name);
    else out += text;
  }

  static constexpr size_t kKeyMax = 32;  // ``n<int32>.out<int32>``
  static constexpr std::string_view kOutputOpen = ",\"output\":[", kKeyOpen = "\"key\":\"", kKeyClose = "\",";

  // Output ``k``'s key of node ``index`` (``outputs``' keys), written into ``buf``; its length.
  static size_t output_key(char* buf, int32_t index, int32_t k) {
    char* p = buf;
    *p++ = 'n';
    p = std::to_chars(p, buf + kKeyMax, index).ptr;
    std::memcpy(p, ".out", 4);
    p += 4;
    return static_cast<size_t>(std::to_chars(p, buf + kKeyMax, k).ptr - buf);
  }

  // Each occurrence of a fixed pattern in a graph's megabytes: Boyer-Moore-Horspool skips most
  // bytes (the patterns are 7 to 26 bytes long).
  class Finder {
   public:
    explicit Finder(std::string_view what) : what_(what), search_(what.begin(), what.end()) {}
    size_t operator()(std::string_view src, size_t from) const {
      if (from >= src.size()) return std::string_view::npos;
      auto at = std::search(src.begin() + static_cast<std::ptrdiff_t>(from), src.end(), search_);
      return at == src.end() ? std::string_view::npos : static_cast<size_t>(at - src.begin());
    }
    size_t size() const { return what_.size(); }

   private:
    std::string_view what_;
    std::boyer_moore_horspool_searcher<std::string_view::const_iterator> search_;
  };

  // Node ``id`` (``n<digits>``) is at place ``k``: found by its index (``node_at``), the last
  // place of an id met twice, as a dict's; an id that is no index's key (a leading zero) by none.
  void node_id(std::string_view id, int32_t k) {
    int32_t index = 0;
    auto [end, ec] = std::from_chars(id.data() + 1, id.data() + id.size(), index);
    if (ec != std::errc() || end != id.data() + id.size() || (id.size() > 2 && id[1] == '0')) return;
    node_k_[index] = k;
  }

  // The place of node ``index`` among the graph's nodes, or -1.
  int32_t node_at(int32_t index) const {
    auto it = node_k_.find(index);
    return it == node_k_.end() ? -1 : it->second;
  }

  int64_t node_of_output(const Outs& o) const {
    int32_t k = node_at(o.index);
    if (k < 0 || static_cast<size_t>(k) >= node_start_.size()) throw std::runtime_error("tensor keys: an output without its node");
    return k;
  }

  // Which of the graph's nodes are at one of ``own``'s places.
  std::vector<bool> places(const std::vector<int64_t>& own) const {
    std::vector<bool> mine(node_start_.size(), false);
    for (int64_t k : own) {
      if (k >= 0 && static_cast<size_t>(k) < mine.size()) mine[static_cast<size_t>(k)] = true;
    }
    return mine;
  }

  // Where node ``k``'s JSON ends (``GraphText.ends``): before the next one's comma, or the graph's ``]}``.
  size_t node_end(size_t k) const {
    return k + 1 < node_start_.size() ? static_cast<size_t>(node_start_[k + 1] - 1) : graph_size_ - 2;
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
      append_header_entry(head, r.key, code, t, offset, offset + r.nbytes);
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
  std::vector<Outs> outs_;  // the nodes the tap holds outputs of, in node order
  std::vector<std::string> texts_;  // their outputs' TensorValue texts
  std::vector<bool> has_;  // whether each output has one (else ``null``)
  // NOTE [the graph's nodes found once]: each node's start and whether it is a function node,
  // by place; each place by node index; the indexed graph's size
  std::vector<int64_t> node_start_;
  std::vector<bool> node_fn_;
  std::unordered_map<int32_t, int32_t> node_k_;
  size_t graph_size_ = 0;
  bool frozen_ = false;
};

}  // namespace gradtrace
