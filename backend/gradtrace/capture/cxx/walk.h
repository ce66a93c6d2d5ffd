// gradtrace capture core: walking new nodes into complete entries.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// NOTE [discovery in C++]: the walk, with what it learns per node class (names, which
// attributes hold saved tensors). One per recorder.
struct Walker {
  // NOTE [nodes from before the block] in graph.py: nodes numbered below this are recorded
  // where reached but not walked into (no inputs, no edges).
  uint64_t boundary = 0;
  bool before_block(const Node* n) const {
    uint64_t s = n->sequence_nr();
    return s < boundary && s != std::numeric_limits<uint64_t>::max();
  }

  // NOTE [discovery in C++]: ``graph.walk_new`` + ``_creation_order`` + ``describe_batch``:
  // every node reachable from ``roots`` that is not known yet, in creation order, as complete
  // entries, the k-th with index ``first_index + k``. Same order and results as the Python
  // functions (tested).
  std::vector<FnEntry> walk_batch(Core& core, py::list roots, bool read_saved, py::handle parameter,
                                  int64_t first_index) {
    std::vector<c10::intrusive_ptr<Node>> stack;
    ska::flat_hash_map<Node*, size_t> found;  // -> position in ``order`` (DFS order)
    std::vector<c10::intrusive_ptr<Node>> order;
    {
      CoreLock lock(core.mu);
      auto& known = core.known;
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
        if (!before_block(n.get())) for (const auto& e : n->next_edges()) {
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
      if (before_block(order[i].get())) continue;
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
    const auto& known_now = core.known;
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
        if (!attrs.empty() && attrs[0].once) {
          e.saved_unread = e.saved_once = true;  // NOTE [reading saved tensors] in saved.py
        } else if (!attrs.empty()) {
          read_saved_into(core, pynode, attrs, parameter, e);
        }
      } else {
        e.saved_unread = true;
      }
      int64_t input_nr = 0;
      if (!before_block(n)) for (const auto& edge : n->next_edges()) {
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

  // NOTE [reading saved tensors] in saved.py: the attributes that hold what nodes of this
  // class saved (``saved_attrs``), found once per class: per C++ node type (no Python object
  // needed to know there is nothing to read), per Python class for custom Functions. An
  // attribute seen holding something that is not a tensor (a size, a scalar) is skipped from
  // then on: the generated node classes give each attribute one fixed type.
  struct SavedAttr {
    std::string attr, label;
    bool skip = false;
    bool once = false;  // ``saved_tensors`` may be read once only: it is the user's
    bool scratch = false;  // ``saved.PARTLY_WRITTEN``: neither its value nor the tensor is kept
    // ``attr`` as an interned Python string, made at its first read and kept for the process
    // (a few hundred names at most): no string decoded and hashed per saved value read
    PyObject* name = nullptr;
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
      // ``saved.uses_up_saved``'s twin: ``clear_saved_tensors_on_access`` on the Function
      bool once = false;
      py::handle cls = reinterpret_cast<PyObject*>(Py_TYPE(node));
      if (PyObject_HasAttrString(cls.ptr(), "_forward_cls")) {
        py::object fwd = cls.attr("_forward_cls");
        if (PyObject_HasAttrString(fwd.ptr(), "clear_saved_tensors_on_access")) {
          int truth = PyObject_IsTrue(fwd.attr("clear_saved_tensors_on_access").ptr());
          if (truth < 0) PyErr_Clear();
          once = truth > 0;
        }
      }
      attrs.push_back({"saved_tensors", "saved_tensors", false, once});
    } else {
      // NOTE [a kernel's workspace] in capture/tensordoc.py: the table is Python's, read once
      // per node class
      py::object partly = py::module_::import("gradtrace.capture.saved").attr("PARTLY_WRITTEN");
      py::object scratch = partly.attr("get")(Py_TYPE(node)->tp_name, py::tuple());
      for (auto nm : names) {
        std::string a = nm.cast<std::string>();
        // ``*_sym_*``: sizes, strides, numels (NOTE [saved arguments] in saved.py)
        if (a.rfind("_saved_", 0) == 0 && a.find("_sym_") == std::string::npos) {
          SavedAttr attr{a, a.substr(7), false};
          attr.scratch = scratch.contains(py::str(attr.label));
          attrs.push_back(std::move(attr));
        }
      }
    }
    return attrs;
  }

  // An int argument as the int64 it is: autograd's binding hands int64s to Python as
  // unsigned (NOTE [saved arguments] in saved.py). False beyond 64 bits.
  static bool read_int(PyObject* o, int64_t& out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    if (overflow == 0) { out = static_cast<int64_t>(v); return true; }
    if (overflow < 0) return false;
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = static_cast<int64_t>(u);  // two's complement: 2**64 - 1 is -1
    return true;
  }

  static bool arg_name_ok(const char* p, Py_ssize_t n) {
    if (n < 1 || n > 32) return false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      char c = p[i];
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
      if (static_cast<unsigned char>(c) >= 0x80) return false;
    }
    return true;
  }

  // ``saved.saved_arg``'s twin: ``"label":value`` appended to ``out`` (an open JSON object,
  // ``{`` written first) when the value is kept (NOTE [saved arguments] in saved.py).
  // Returns 0 when written, 1 when not kept this time, 2 for a type never kept (a dtype, a
  // complex: the generated node classes give each attribute one fixed type).
  static int write_arg(std::string& out, const std::string& label, PyObject* v) {
    size_t mark = out.size();
    out.push_back(out.empty() ? '{' : ',');
    write_str(out, label);
    out.push_back(':');
    int64_t x = 0;
    if (PyBool_Check(v)) { out += v == Py_True ? "true" : "false"; return 0; }
    if (PyLong_Check(v)) {
      if (read_int(v, x)) { format_int(out, x); return 0; }
      out.resize(mark);
      return 1;
    }
    if (PyFloat_Check(v)) { format_double(out, PyFloat_AS_DOUBLE(v)); return 0; }
    if (PyUnicode_Check(v)) {
      Py_ssize_t n = 0;
      const char* p = PyUnicode_AsUTF8AndSize(v, &n);
      if (p == nullptr) PyErr_Clear();
      if (p != nullptr && arg_name_ok(p, n)) { write_str(out, std::string_view(p, static_cast<size_t>(n))); return 0; }
      out.resize(mark);
      return 1;
    }
    if (PyTuple_Check(v) || PyList_Check(v)) {
      bool tuple = PyTuple_Check(v);
      Py_ssize_t n = tuple ? PyTuple_GET_SIZE(v) : PyList_GET_SIZE(v);
      bool ok = n <= static_cast<Py_ssize_t>(kArgListLimit);
      out.push_back('[');
      for (Py_ssize_t k = 0; ok && k < n; ++k) {
        PyObject* item = tuple ? PyTuple_GET_ITEM(v, k) : PyList_GET_ITEM(v, k);
        ok = PyLong_Check(item) && !PyBool_Check(item) && read_int(item, x);
        if (!ok) break;
        if (k) out.push_back(',');
        format_int(out, x);
      }
      if (ok) { out.push_back(']'); return 0; }
      out.resize(mark);
      return 1;
    }
    out.resize(mark);
    return 2;
  }

  // NOTE [saved tensors from no node] in saved.py (``PyCore._hold_saved``): an alias of a
  // saved tensor no node made (a copy of a parameter's and of batch norm's running statistics:
  // NOTE [a saved parameter copied], [running statistics copied]), charged to the one keep
  // budget and held by the output tap as a forward value (``Tap::hold_saved``), so a gradient
  // may let go of it; a subclass, a transform's wrapper or a tensor that is not strided is not
  // held. Without a tap (outside the block) it is held by its entry, within the same budget,
  // and nothing lets go of it.
  // ``RUNNING_STATS`` in saved.py: NOTE [running statistics copied].
  static bool running_stat(const std::string& name) { return name == "running_mean" || name == "running_var"; }

  void hold_saved(Core& core, const at::Tensor& t, SavedEntry& sv) {
    if (t.key_set().has_any(c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::FuncTorchBatched,
                                                 c10::DispatchKey::FuncTorchGradWrapper}))) {
      return;
    }
    if (t.layout() != at::kStrided || t.is_nested()) return;
    int64_t nbytes = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
    CoreLock lock(core.mu);
    try {
      // NOTE [a saved parameter copied], [running statistics copied] in saved.py: copied now
      at::Tensor held = t;
      if ((t.requires_grad() || running_stat(sv.name)) && core.kept_bytes + nbytes <= core.keep_budget) {
        at::AutoGradMode no_grad(false);
        Unseen unseen(t);
        held = t.tensor_data().clone();
      }
      if (core.tap != nullptr) {
        sv.held = hold_saved_in_tap(core.tap, held, nbytes);
        return;
      }
      if (core.kept_bytes + nbytes > core.keep_budget) {
        sv.kept_dropped = nbytes > 0 ? nbytes : 1;
        return;
      }
      Unseen unseen(held);  // ``tensor_data`` asks a dispatch mode of the program's to detach
      sv.kept = held.tensor_data();  // no dispatch; shares the version counter
      sv.kept_version = core.version_of(held);
      core.charge(nbytes);
    } catch (const std::exception&) {  // a tensor that cannot be aliased: not held
      sv.kept = at::Tensor();
    }
  }

  // ``THPVariable_Check`` without its ``isinstance`` for the plain values most saved
  // arguments are (an int ``dim``, a float ``alpha``, a tuple of sizes, None): that check
  // runs the metaclass's instance check for anything not exactly a Tensor.
  static bool is_tensor(PyObject* o) {
    if (o == Py_None || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) ||
        PyTuple_CheckExact(o) || PyList_CheckExact(o) || PyUnicode_CheckExact(o)) {
      return false;
    }
    return THPVariable_Check(o);
  }

  // Each saved tensor of ``node`` as a complete saved-tensor entry of ``e``, with what is kept
  // of it but never written (parameter, storage address), and its small non-tensor arguments
  // as ``e.args`` (NOTE [saved arguments] in saved.py). Small tensors (at most
  // ``kValuesLimit`` elements) are captured as they are now, as a value of the core
  // (NOTE [saved values] in saved.py).
  void read_saved_into(Core& core, py::handle node, std::vector<SavedAttr>& attrs,
                       py::handle parameter, FnEntry& e) {
    auto* param_type = reinterpret_cast<PyTypeObject*>(parameter.ptr());
    auto entry = [&](std::string label, PyObject* obj, bool scratch) {
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
      // a parameter once a backward pass has run (NOTE [a saved parameter copied])
      // a kernel's scratch: its name and size only (NOTE [a kernel's workspace] in capture/tensordoc.py)
      if (!scratch && t.is_leaf() && (!t.requires_grad() || !core.passes.empty()) && core.keep_budget > 0) {
        hold_saved(core, t, sv);
      }
      if (!scratch && t.numel() <= kValuesLimit) {
        CoreLock lock(core.mu);
        sv.vid = core.capture(t, /*keep=*/false);  // its value for the document only
      }
      e.saved_bytes += sv.bytes;
      e.saved.push_back(std::move(sv));
    };
    for (SavedAttr& attr : attrs) {
      if (attr.skip) continue;
      if (attr.name == nullptr) {
        attr.name = PyUnicode_InternFromString(attr.attr.c_str());
        if (attr.name == nullptr) throw python_error();
      }
      PyObject* value = PyObject_GetAttr(node.ptr(), attr.name);
      if (value == nullptr) { PyErr_Clear(); continue; }  // freed, or unreadable for this node
      py::object v = py::reinterpret_steal<py::object>(value);
      try {
        if (is_tensor(value)) {
          entry(attr.label, value, attr.scratch);
        } else if (PyTuple_Check(value) || PyList_Check(value)) {
          py::sequence seq = py::reinterpret_borrow<py::sequence>(value);
          size_t n = seq.size();
          bool tensors = false;
          for (size_t k = 0; k < n && !tensors; ++k) tensors = is_tensor(py::object(seq[k]).ptr());
          if (!tensors) {
            write_arg(e.args, attr.label, value);  // a list of ints (dims), or nothing
            continue;
          }
          for (size_t k = 0; k < n; ++k) {
            py::object item = seq[k];
            if (is_tensor(item.ptr())) entry(attr.label + "[" + std::to_string(k) + "]", item.ptr(), attr.scratch);
          }
        } else if (value != Py_None) {
          if (write_arg(e.args, attr.label, value) == 2) attr.skip = true;
        }
      } catch (const std::exception&) {
        // an unreadable saved value is skipped, as in Python
      }
    }
    if (!e.args.empty()) e.args.push_back('}');
  }
};

}  // namespace gradtrace
