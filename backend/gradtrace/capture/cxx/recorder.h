// gradtrace capture core: the recorder Python drives (discovery, passes, JSON).
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

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
  static constexpr int64_t kOutputCost = 100;  // one of several outputs' meta (NOTE [what a node costs])
  std::string nodes_message_;
  // nn.Parameter, and the lists of the line tracer's and module tracker's ``SeqLog.steps``
  // (appended to in place for the whole run): what ``discover`` places nodes by.
  py::object parameter_, line_seqs_, line_values_, mod_seqs_, mod_values_;

  void configure(int64_t max_events, int64_t cost_event, int64_t cost_value,
                 std::string events_message, std::string bytes_message, py::object on_limit,
                 py::object on_created, int64_t max_nodes, std::string nodes_message,
                 int64_t cost_node, int64_t cost_saved, int64_t cost_edge, py::object parameter,
                 py::tuple line_steps, py::tuple module_steps) {
    parameter_ = std::move(parameter);
    line_seqs_ = line_steps[0];
    line_values_ = line_steps[1];
    mod_seqs_ = module_steps[0];
    mod_values_ = module_steps[1];
    if (!PyList_Check(line_seqs_.ptr()) || !PyList_Check(line_values_.ptr()) ||
        !PyList_Check(mod_seqs_.ptr()) || !PyList_Check(mod_values_.ptr())) {
      throw py::type_error("configure: the steps of a SeqLog are two lists");
    }
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

  // The bytes the hooks added since the last call; ``budget`` less those is left to them.
  int64_t sync_bytes(int64_t budget) {
    CoreLock lock(core->mu);
    int64_t used = core->bytes_used;
    core->bytes_left = budget - used;
    core->bytes_used = 0;
    return used;
  }

  // A node found by ``walk`` becomes recorded: known by its index, kept alive, its forward
  // event noted, and its hook registered (unless ``hooks`` is off: the sweep at the end).
  void register_node(const c10::intrusive_ptr<Node>& node, int32_t index, int32_t line, bool hooks,
                     bool acc, bool relay) {
    {
      CoreLock lock(core->mu);
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
        uintptr_t key = node->add_post_hook(std::make_unique<Hook>(core, node.get(), index, acc, relay));
        core->hooks.emplace_back(node, key);
      }
    }
  }

  // The index of a recorded node, or -1.
  int64_t index_of(py::handle node) {
    c10::intrusive_ptr<Node> n = node_of(node.ptr());
    CoreLock lock(core->mu);
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
  // separated, and what is left of ``budget``: their saved tensors' values spend it in
  // document order (NOTE [saved values] in saved.py).
  // (The core's mutex is not held while writing: ``write_entry`` reads a module path from
  // Python, and documents are built once the run's hooks are done, as for the entries.)
  std::pair<py::bytes, int64_t> nodes_json(int64_t a, int64_t b, int64_t budget) {
    std::string out;
    out.reserve(static_cast<size_t>(b - a) * 400);
    std::vector<uint8_t> with;
    for (int64_t i = a; i < b; ++i) {
      const FnEntry& e = entry_at(i);
      with.assign(e.saved.size(), 0);
      for (size_t k = 0; k < e.saved.size(); ++k) {
        if (e.saved[k].vid < 0) continue;
        const Value& v = core->values[static_cast<size_t>(e.saved[k].vid)];
        bool has = v.kind == 2 || (v.kind == 3 && v.py_with != v.py_without);
        if (!has) continue;
        if (v.numel > budget) { budget = 0; continue; }
        budget -= v.numel;
        with[k] = 1;
      }
      if (i > a) out.push_back(',');
      write_entry(out, e, &core->values, with.data());
    }
    return {py::bytes(out), budget};
  }

  // An edge's keys, in the order edges_json writes them (NOTE [the core's keys come from the
  // models] in backend/gradtrace/schema/cxx_keys.py).
  static_assert(keys::in_order({keys::edge::input_nr, keys::edge::source, keys::edge::target}));
  py::bytes edges_json(int64_t a, int64_t b) {
    std::string out;
    out.reserve(static_cast<size_t>(b - a) * 120);
    for (int64_t i = a; i < b; ++i) {
      const FnEntry& e = entry_at(i);
      for (const auto& [input_nr, src] : e.edges) {
        if (!out.empty()) out.push_back(',');
        out += keys::edge::input_nr.open;
        format_int(out, input_nr);
        out += keys::edge::source.next;
        write_id(out, src);
        out += keys::edge::target.next;
        write_id(out, e.index);
        out.push_back('}');
      }
    }
    return py::bytes(out);
  }

  // The snippet variable first bound to a node's output (NOTE [variables of intermediates]
  // in definitions.py): the first one given stays.
  void set_var(int64_t index, const std::string& name) {
    FnEntry& e = entry_at(index);
    if (e.var.empty()) e.var = name;
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
  py::tuple discover(py::list roots, bool read_saved, int64_t first_index, int64_t bytes_left,
                     py::object created_in_pass, bool tracer_active, py::object line,
                     py::object stack_module, py::object seq_mark, bool hooks) {
    int64_t n_fns = static_cast<int64_t>(entries_.size());
    std::vector<FnEntry> batch = walker.walk_batch(*core, roots, read_saved, parameter_, first_index);
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
        l = seq_at(line_seqs_.ptr(), line_values_.ptr(), static_cast<int64_t>(seq));
        mo = seq_at(mod_seqs_.ptr(), mod_values_.ptr(), static_cast<int64_t>(seq));
      } else if (!has_mark || seq >= mark) { l = line.ptr(); mo = stack_module.ptr(); }
      else { l = Py_None; mo = Py_None; }
      places[r] = {l, mo};
      nxt_line = l;
      nxt_mod = mo;
    }
    py::object stopped = py::none();
    int64_t used = 0;
    size_t recorded = 0;
    PyObject* last_mod = nullptr;  // the module path whose stack length is in ``stack_cost``
    int64_t stack_cost = 0;
    for (size_t k = 0; k < m; ++k) {
      FnEntry& e = batch[k];
      int64_t index = e.index;
      if (index >= max_nodes_) { stopped = py::str(nodes_message_); break; }
      auto [l, mo] = places[k];
      if (mo != last_mod) {  // Python's ``len(stack_json) + 16`` (NOTE [module calls])
        last_mod = mo;
        stack_cost = 0;
        if (mo != Py_None) {
          py::object js = py::reinterpret_borrow<py::object>(mo).attr("stack_json");
          stack_cost = static_cast<int64_t>(PyUnicode_GetLength(js.ptr())) + 16;
        }
      }
      // NOTE [what a node costs] in recorder.py: its name, shape and outputs by their length
      int64_t out_cost = static_cast<int64_t>(e.name->size()) +
          (e.outs.empty() || !e.outs[0].known ? 0 : 8 * static_cast<int64_t>(e.outs[0].shape.size())) +
          (e.outs.size() > 1 ? kOutputCost * static_cast<int64_t>(e.outs.size()) : 0);
      int64_t cost = cost_node_ + out_cost + cost_saved_ * static_cast<int64_t>(e.saved.size()) +
                     cost_edge_ * static_cast<int64_t>(e.edges.size()) + stack_cost +
                     (e.args.empty() ? 0 : static_cast<int64_t>(e.args.size()) + 14);
      if (used + cost > bytes_left) { stopped = py::str(core->bytes_message); break; }
      used += cost;
      e.line = l == Py_None ? kNullLine : static_cast<int32_t>(PyLong_AsLong(l));
      e.module = py::reinterpret_borrow<py::object>(mo);
      e.seq = n_fns + static_cast<int64_t>(k);
      e.created_in_pass = pass_nr;
      register_node(e.node, static_cast<int32_t>(index), e.line, hooks, e.acc,
                    *e.name == "BackwardHookFunctionBackward");
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
    CoreLock lock(core->mu);
    Pass p;
    p.line = line.is_none() ? kNullLine : line.cast<int32_t>();
    core->passes.push_back(std::move(p));
    return static_cast<int32_t>(core->passes.size() - 1);
  }

  // The recorder stopped (a limit): hooks record nothing more.
  void set_boundary(uint64_t seq) { walker.boundary = seq; }

  void stop() {
    CoreLock lock(core->mu);
    core->stopped = true;
  }

  void set_active(int32_t pass) {
    CoreLock lock(core->mu);
    core->active = pass;
  }

  // Passes begun by the engine itself since the last call: [(index, outer)].
  std::vector<std::pair<int32_t, int32_t>> new_engine_passes() {
    CoreLock lock(core->mu);
    std::vector<std::pair<int32_t, int32_t>> out;
    for (size_t i = core->passes_reported; i < core->passes.size(); ++i) {
      if (core->passes[i].engine) out.emplace_back(static_cast<int32_t>(i), core->passes[i].outer);
    }
    core->passes_reported = core->passes.size();
    return out;
  }

  void end_backward() {
    // the outermost backward call returned: its gradients are not met again
    CoreLock lock(core->mu);
    core->cache.clear();
    core->by_data.clear();
  }

  // AccumulateGrad events since the last call: [(leaf tensor, grad value id, that grad's
  // version, its TensorImpl address)] (NOTE [gradient edits] in gradedits.py).
  py::list take_accumulations() {
    std::vector<std::pair<Node*, AccSeen>> taken;
    {
      CoreLock lock(core->mu);
      for (const AccSeen& seen : core->acc_events) {
        const Event& ev = core->events[static_cast<size_t>(seen.event)];
        AccSeen out{ev.grad, seen.version, seen.impl};
        taken.emplace_back(core->by_index.at(static_cast<size_t>(ev.node)), out);
      }
      core->acc_events.clear();
    }
    py::list out;
    for (auto [node, seen] : taken) {
      auto* a = static_cast<torch::autograd::AccumulateGrad*>(node);
      py::object leaf = a->variable.defined()
          ? py::reinterpret_steal<py::object>(THPVariable_Wrap(a->variable)) : py::none();
      out.append(py::make_tuple(leaf, seen.event, seen.version, static_cast<int64_t>(seen.impl)));
    }
    return out;
  }

  // The recorder's first post-accumulate hook on ``leaf``: its .grad as accumulated, before
  // the snippet's own post-accumulate hooks run (an optimizer step in backward clears it).
  void accumulated(const at::Tensor& leaf) {
    const at::Tensor& grad = leaf.grad();
    if (!grad.defined()) return;
    CoreLock lock(core->mu);
    if (!core->enabled || core->stopped) return;
    core->acc_early[leaf.unsafeGetTensorImpl()] =
        AccSeen{core->capture(grad), core->version_of(grad), reinterpret_cast<intptr_t>(grad.unsafeGetTensorImpl())};
  }

  void hook_change(const at::Tensor& before, const at::Tensor& after) {
    c10::intrusive_ptr<Node> node = torch::autograd::get_current_node();
    if (!node) return;
    CoreLock lock(core->mu);
    auto& v = core->hook_changes[node.get()];
    v.push_back(core->capture(before));
    v.push_back(core->capture(after));
  }

  // Values Python must encode itself (rare dtypes): [(id, tensor)].
  std::vector<std::pair<int32_t, at::Tensor>> held() {
    CoreLock lock(core->mu);
    std::vector<std::pair<int32_t, at::Tensor>> out;
    for (size_t i = 0; i < core->values.size(); ++i) {
      auto& v = core->values[i];
      if (v.kind == 3 && v.py_with.empty()) out.emplace_back(static_cast<int32_t>(i), v.held);
    }
    return out;
  }

  void set_encoded(int32_t id, std::string with_values, std::string without_values) {
    CoreLock lock(core->mu);
    auto& v = core->values.at(static_cast<size_t>(id));
    v.py_with = std::move(with_values);
    v.py_without = std::move(without_values);
    v.held = at::Tensor();
  }

  // (canonical JSON of value ``id``, with or without its values; the number of values it holds).
  std::pair<py::bytes, int64_t> value(int32_t id, bool with_values) {
    CoreLock lock(core->mu);
    if (id == kNone) return {py::bytes("null"), 0};
    const Value& v = core->values.at(static_cast<size_t>(id));
    bool has = v.kind == 2 || (v.kind == 3 && v.py_with != v.py_without);
    return {py::bytes(value_json(*core, id, with_values)), has ? v.numel : 0};
  }

  // A value id for ``t`` as it is now (a tensor node's value, taken outside backward).
  int32_t capture(const at::Tensor& t) {
    CoreLock lock(core->mu);
    return core->capture(t);
  }

  // NOTE [kept tensors] in capture/tensorfile.py: value ``id``'s kept tensor (None when not
  // kept), the version it was kept at, whether it is a copy, and the bytes not held (budget).
  py::tuple kept(int32_t id) {
    CoreLock lock(core->mu);
    if (id == kNone) return py::make_tuple(py::none(), -1, false, 0);
    const Value& v = core->values.at(static_cast<size_t>(id));
    if (!v.kept.defined()) return py::make_tuple(py::none(), v.kept_version, v.kept_copy, v.kept_dropped);
    return py::make_tuple(py::reinterpret_steal<py::object>(THPVariable_Wrap(v.kept)), v.kept_version,
                          v.kept_copy, v.kept_dropped);
  }

  // NOTE [held within the budget] in capture/tensorfile.py (``PyCore.set_keep_budget``).
  void set_keep_budget(int64_t bytes) {
    CoreLock lock(core->mu);
    core->keep_budget = bytes;
  }

  // NOTE [the tap in C++] (cxx/tap.h): ``OutputTap``'s native twin, started and stopped
  // around the block on its thread; ``tap_entries`` hands what it holds to the document.
  std::unique_ptr<Tap> tap_;
  c10::impl::IncludeDispatchKeyGuard* tap_on_ = nullptr;
  Tap* tap_before_ = nullptr;

  void tap_start() {
    if (!tap_) {
      tap_ = std::make_unique<Tap>();
      tap_->core = core.get();
    }
    {
      CoreLock lock(core->mu);
      core->tap = tap_.get();
    }
    tap_->thread = std::this_thread::get_id();
    tap_before_ = active_tap();
    active_tap() = tap_.get();
    if (tap_on_ == nullptr) tap_on_ = new c10::impl::IncludeDispatchKeyGuard(kTapKey);
  }

  void tap_stop() {
    {
      CoreLock lock(core->mu);
      core->tap = nullptr;  // the block is over: nothing left to yield to a gradient
    }
    if (tap_on_ != nullptr) {
      delete tap_on_;
      tap_on_ = nullptr;
    }
    if (tap_ && active_tap() == tap_.get()) active_tap() = tap_before_;
  }

  void tap_pause(int delta) {
    if (tap_) tap_->paused += delta;
  }

  int tap_paused() { return tap_ ? tap_->paused : 0; }

  ~Recorder() {
    if (tap_) tap_clear();
  }

  // (grad_fn, output_nr, tensor or None, version, copied, bytes not held) of every output held.
  py::list tap_entries() {
    py::list out;
    if (!tap_) return out;
    for (const TapEntry& e : tap_->entries) {
      if (!e.node) continue;  // a saved tensor's (``saved_kept``)
      py::object fn = py::reinterpret_steal<py::object>(torch::autograd::functionToPyObject(e.node));
      py::object t = e.tensor.defined() ? py::reinterpret_steal<py::object>(THPVariable_Wrap(e.tensor)) : py::none();
      out.append(py::make_tuple(fn, e.nr, t, e.version, e.copied, e.dropped));
    }
    return out;
  }

  void tap_clear() {
    tap_stop();
    take_saved();
    CoreLock lock(core->mu);
    core->tap = nullptr;
    tap_.reset();
  }

  void keep_copy(int32_t id) {
    CoreLock lock(core->mu);
    core->keep_copy(id);
  }

  // The saved tensors the tap holds (``Tap::hold_saved``), moved to their entries: the tap
  // is done with them once the block is over.
  void take_saved() {
    if (!tap_) return;
    CoreLock lock(core->mu);
    for (FnEntry& e : entries_) {
      for (SavedEntry& s : e.saved) {
        if (s.held < 0) continue;
        TapEntry& held = tap_->entries[static_cast<size_t>(s.held)];
        s.kept = std::move(held.tensor);
        held.tensor = at::Tensor();
        // a copy made before a write is the value as saved, at the copy's own version
        s.kept_version = held.copied && s.kept.defined() ? Tap::version_of(s.kept) : held.version;
        s.kept_dropped = held.dropped;
        s.held = -1;
      }
    }
  }

  // NOTE [held within the budget] in capture/tensorfile.py: the most bytes held at once while
  // recording (``PyCore.held_peak``).
  int64_t held_peak() {
    CoreLock lock(core->mu);
    return core->kept_peak;
  }

  // NOTE [each tensor let go once written] in capture/tensorfile.py (``PyCore.release_kept``):
  // everything held for the tensor file is let go; the file's candidates hold what it keeps.
  void release_kept() {
    take_saved();
    CoreLock lock(core->mu);
    for (Value& v : core->values) v.kept = at::Tensor();
    for (FnEntry& e : entries_) {
      for (SavedEntry& s : e.saved) s.kept = at::Tensor();
    }
    if (tap_) {
      for (TapEntry& e : tap_->entries) e.tensor = at::Tensor();
      tap_->by_storage.clear();
      tap_->links.clear();
      tap_->held.clear();
      tap_->forget_values();  // NOTE [held gradients copied before a write] in cxx/tap.h
    }
    core->kept_bytes = 0;
  }

  // The saved tensors held for the tensor file (``PyCore.saved_kept``): (node index, saved
  // name, the alias or None, its version when held, bytes not held), in node order
  // (NOTE [saved tensors from no node] in saved.py).
  py::list saved_kept() {
    take_saved();
    py::list out;
    for (const FnEntry& e : entries_) {
      for (const SavedEntry& s : e.saved) {
        if (!s.kept.defined() && s.kept_dropped == 0) continue;
        py::object t = s.kept.defined() ? py::reinterpret_steal<py::object>(THPVariable_Wrap(s.kept))
                                        : py::none();
        out.append(py::make_tuple(e.index, s.name, t, s.kept_version, s.kept_dropped));
      }
    }
    return out;
  }

  // Each backward event's value ids (``PyCore.event_refs``): (event index, grad_outputs,
  // grad_inputs, grad, hook changes as before/after pairs flattened); forward events skipped.
  py::list event_refs() {
    CoreLock lock(core->mu);
    py::list out;
    for (size_t i = 0; i < core->events.size(); ++i) {
      const Event& ev = core->events[i];
      if (ev.pass < 0) continue;
      auto ids = [&](int32_t begin, int32_t n) {
        py::list l;
        for (int32_t k = 0; k < n; ++k) l.append(core->refs[static_cast<size_t>(begin + k)]);
        return l;
      };
      out.append(py::make_tuple(static_cast<int64_t>(i), ids(ev.go_begin, ev.go_n),
                                ids(ev.gi_begin, ev.gi_n), ev.grad, ids(ev.hc_begin, 2 * ev.hc_n)));
    }
    return out;
  }

  // How many numbers value ``id`` would write with its values (0: it has none to write), so
  // that a value past the budget is never written with them only to be dropped.
  int64_t numel_of(int32_t id) {
    CoreLock lock(core->mu);
    if (id == kNone) return 0;
    const Value& v = core->values.at(static_cast<size_t>(id));
    bool has = v.kind == 2 || (v.kind == 3 && v.py_with != v.py_without);
    return has ? v.numel : 0;
  }

  Walker walker;

  // The events array as canonical JSON (``events.h``).
  std::pair<py::bytes, int64_t> events_json(int64_t budget) {
    CoreLock lock(core->mu);
    return gradtrace::events_json(*core, budget);
  }

  // Pass ``pass`` released the saved tensors of every node it executed (no retain_graph):
  // each entry not freed before is marked freed after this pass; returns the bytes freed,
  // parameters excluded (releasing a reference to a parameter frees nothing).
  int64_t mark_freed(int32_t pass) {
    std::vector<int32_t> executed;
    {
      CoreLock lock(core->mu);
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
      CoreLock lock(core->mu);
      core->enabled = false;
      hooks.swap(core->hooks);
      core->cache.clear();
      core->by_data.clear();
      core->hook_changes.clear();
      core->acc_early.clear();
    }
    for (auto& [node, key] : hooks) node->del_post_hook(key);
    hooks.clear();
    Py_CLEAR(core->on_limit);
    Py_CLEAR(core->on_created);
  }
};

}  // namespace gradtrace
