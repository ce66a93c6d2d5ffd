// gradtrace capture core: the state the backward hooks share (events, values, passes).
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// ------------------------------------------------------------------------- the core

struct Event {
  int32_t node;
  int32_t pass;       // -1: a forward event
  int32_t line;
  int32_t go_begin, go_n, gi_begin, gi_n;
  int32_t grad;       // AccumulateGrad: the leaf's .grad after accumulation
  int32_t hc_begin, hc_n;
};

// An AccumulateGrad event's .grad as captured: which tensor at which version (NOTE [gradient
// edits] in gradedits.py: a change made later in the same backward is found against these).
struct AccSeen {
  int32_t event;
  int64_t version;
  intptr_t impl;
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

// NOTE [the core's lock passes by the tap]: whatever the core runs while it holds ``Core::mu``
// (a saved value's ``contiguous`` in ``encode``, stats, clones) is its own work, not the
// program's: it must not reach the tap, whose copy before a write takes ``mu`` again
// (NOTE [held gradients copied before a write] in cxx/tap.h) and would wait on itself. So the
// core takes ``mu`` only through this lock, which also turns the tap's key off.
struct CoreLock {
  std::lock_guard<std::mutex> lock;
  c10::impl::ExcludeDispatchKeyGuard no_tap;
  explicit CoreLock(std::mutex& m) : lock(m), no_tap(c10::DispatchKey::TESTING_ONLY_GenericMode) {}
};

struct Tap;
// Lets go of the forward outputs the tap held last until ``need`` bytes are free; the bytes let
// go (cxx/tap.h; called with ``Core::mu`` held).
int64_t evict_outputs(Tap* tap, int64_t need);
// ``Tap::hold_saved``: a saved tensor no node made, held as a forward value (cxx/tap.h).
int32_t hold_saved_in_tap(Tap* tap, const at::Tensor& t, int64_t nbytes);
// ``Tap::hold_value``: a captured gradient held by alias, copied before a write like a forward
// output (NOTE [held gradients copied before a write] in cxx/tap.h; ``Core::mu`` held).
void hold_value_in_tap(Tap* tap, int32_t id, const at::Tensor& t);

struct Core;

struct Hook : torch::autograd::FunctionPostHook {
  std::shared_ptr<Core> core;
  Node* node;
  int32_t index;
  bool acc;
  bool relay;  // a module backward hook's node: NOTE [module backward hooks] in gradedits.py
  Hook(std::shared_ptr<Core> c, Node* n, int32_t i, bool a, bool r)
      : core(std::move(c)), node(n), index(i), acc(a), relay(r) {}
  variable_list operator()(const variable_list& grad_inputs,
                           const variable_list& grad_outputs) override;
};

struct Core : std::enable_shared_from_this<Core> {
  std::mutex mu;
  std::vector<Value> values;
  std::vector<Event> events;
  std::vector<int32_t> refs;
  ska::flat_hash_map<c10::TensorImpl*, Cached> cache;  // open addressing: one probe, no node per entry
  std::vector<Pass> passes;
  size_t passes_reported = 0;
  int32_t active = -1;
  std::unordered_map<Node*, std::vector<int32_t>> hook_changes;
  std::vector<std::pair<c10::intrusive_ptr<Node>, uintptr_t>> hooks;
  std::vector<AccSeen> acc_events;  // AccumulateGrad events not yet drained
  // leaf -> its .grad captured by the recorder's first post-accumulate hook (value id in
  // ``event``), taken by the leaf's next AccumulateGrad event (NOTE [gradient edits])
  std::unordered_map<c10::TensorImpl*, AccSeen> acc_early;
  ska::flat_hash_map<Node*, int32_t> known;  // every recorded node -> its index ("n<index>")
  std::vector<Node*> by_index;  // index -> node (nullptr: a tensor node)
  std::vector<c10::intrusive_ptr<Node>> alive;  // NOTE [keeping nodes alive] in graph.py
  int64_t max_events = 0, n_events = 0;
  int64_t bytes_left = 0, bytes_used = 0;
  int64_t cost_event = 0, cost_value = 0;

  // NOTE [what a value costs] in recorder.py: a value of a dtype of at most four bytes is
  // charged ``kNarrowValueSaving`` less than the full ``cost_value``.
  static constexpr int64_t kNarrowValueSaving = 35;
  int64_t value_cost(const at::Tensor& g) const {
    if (!g.defined()) return 0;
    return g.element_size() <= 4 && !g.is_complex() ? cost_value - kNarrowValueSaving : cost_value;
  }
  // Where each reference's (and each event's ``grad``) ``key`` goes in the events' JSON as
  // ``events_json`` last wrote it, -1 for none (cxx/events.h, cxx/stats.h).
  std::vector<int64_t> ref_at, grad_at;
  std::string events_message, bytes_message;
  bool stopped = false, enabled = true;
  PyObject* on_limit = nullptr;    // rec.stop(message): raises LimitReached
  PyObject* on_created = nullptr;  // nodes made by a create_graph pass: (pass, line, [grads])

  int64_t version_of(const at::Tensor& t) {
    if (t.is_inference()) return -1;
    return static_cast<int64_t>(t.unsafeGetTensorImpl()->version_counter().current_version());
  }

  int32_t capture(const at::Tensor& t, bool keep = true) {
    if (!t.defined()) return kNone;
    c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    int64_t ver = version_of(t);
    auto it = cache.find(impl);
    if (it != cache.end() && !it->second.weak.expired() && it->second.version == ver) {
      Value& seen = values[static_cast<size_t>(it->second.id)];
      if (keep && !seen.kept.defined() && !seen.kept_copy && seen.kept_dropped == 0) keep_alias(seen, t, ver);
      return it->second.id;
    }
    int32_t id = static_cast<int32_t>(values.size());
    // thousands of values per run: the first growth skips the small steps' moves of every Value
    if (values.size() == values.capacity()) values.reserve(std::max<size_t>(8192, 2 * values.capacity()));
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
    Cached entry{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr()), ver, id};
    auto slot = cache.find(impl);
    if (slot != cache.end()) slot->second = std::move(entry);
    else cache.emplace(impl, std::move(entry));
    Value& made = values.back();
    made.kept = at::Tensor();
    made.kept_copy = false;
    made.kept_dropped = 0;
    if (keep) keep_alias(made, t, ver);
    return id;
  }

  // NOTE [kept tensors] in capture/tensorfile.py (``PyCore._keep``): a subclass, or a
  // functorch transform's wrapper (it has no values outside its level), is not kept
  //
  // NOTE [held within the budget] in capture/tensorfile.py: once the bytes held reach
  // ``keep_budget`` nothing more is held (``kept_dropped`` says how many bytes were not), so
  // the gradients held while recording never pass the run's budget; in capture order, so
  // the same snippet and seed leave out the same ones.
  int64_t keep_budget = 0;
  int64_t kept_bytes = 0;
  int64_t kept_peak = 0;  // the most ``kept_bytes`` ever was (``held_peak``: for tests and benches)
  Tap* tap = nullptr;  // the output tap charging the same budget (NOTE [the tap in C++], cxx/tap.h)

  void keep_alias(Value& v, const at::Tensor& t, int64_t ver) {
    if (t.key_set().has_any(c10::DispatchKeySet({c10::DispatchKey::FuncTorchBatched,
                                                 c10::DispatchKey::FuncTorchGradWrapper}))) {
      v.kept_dropped = kKeptTransform;
      return;
    }
    if (t.key_set().has(c10::DispatchKey::Python)) return;  // a subclass: reason ``dtype``
    if (keep_budget <= 0) return;  // no tensor file: nothing held
    int64_t nbytes = t.layout() == at::kStrided && !t.is_nested()
                         ? static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size()) : 0;
    if (kept_bytes + nbytes > keep_budget && tap != nullptr) {  // forward values yield to gradients
      kept_bytes -= evict_outputs(tap, kept_bytes + nbytes - keep_budget);
    }
    if (kept_bytes + nbytes > keep_budget) {
      v.kept_dropped = nbytes > 0 ? nbytes : 1;
      return;
    }
    try {
      Unseen unseen(t);  // ``tensor_data`` asks a dispatch mode of the program's to detach
      v.kept = t.tensor_data();  // no dispatch; shares the version counter
      v.kept_version = ver;
      charge(nbytes);
      // NOTE [held gradients copied before a write] in cxx/tap.h
      if (tap != nullptr) hold_value_in_tap(tap, static_cast<int32_t>(&v - values.data()), t);
    } catch (const std::exception&) {  // a tensor that cannot be aliased (forward-AD's): not kept
      v.kept = at::Tensor();
    }
  }

  void charge(int64_t nbytes) {
    kept_bytes += nbytes;
    if (kept_bytes > kept_peak) kept_peak = kept_bytes;
  }

  // A copy of value ``id``'s kept tensor, still as it was captured (``PyCore.keep_copy``):
  // an AccumulateGrad's gradients, which autograd or the program may change in place later.
  void keep_copy(int32_t id) {
    if (id == kNone) return;
    Value& v = values[static_cast<size_t>(id)];
    if (!v.kept.defined() || v.kept_copy) return;
    if (version_of(v.kept) != v.kept_version) { v.kept = at::Tensor(); return; }
    try {
      Unseen unseen(v.kept);
      v.kept = v.kept.clone();
      v.kept_copy = true;
    } catch (const std::exception&) {
      v.kept = at::Tensor();
    }
  }

  // NOTE [same elements, other shape]: a view, reshape or transpose of a big gradient (the
  // engine passes the same memory through ViewBackward, TransposeBackward, ...) holds the
  // same elements in the same memory order, so its stats (which ``encode`` computes over the
  // memory, in memory order) are the very same numbers: reused, only the shape differs. Keyed
  // by the first element's address, for dense CPU float tensors whose stats alone are kept;
  // the storage's weak reference and the version make sure it is still the same data.
  std::unordered_map<const void*, SameData> by_data;

  static const void* same_elements_key(const at::Tensor& t, int64_t ver) {
    if (ver < 0 || t.numel() <= kValuesLimit || t.is_neg() || !t.is_cpu() || t.layout() != at::kStrided ||
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

  // Raise ``message`` in Python through ``on_limit`` (called without ``mu`` held); on
  // another thread than the block's, ``on_limit`` returns normally and so does this: that
  // thread's backward goes on (NOTE [other threads] in recorder.py).
  void raise_limit(const std::string& message) {
    pybind11::gil_scoped_acquire gil;
    PyObject* res = PyObject_CallFunction(on_limit, "s", message.c_str());
    if (res == nullptr) throw python_error();
    Py_DECREF(res);
  }

  void on_done(Node* node, int32_t index, bool acc, bool relay, const variable_list& gi,
               const variable_list& go) {
    if (!enabled || stopped) return;
    std::string limit;
    std::vector<at::Tensor> created;
    int32_t pass = -1, line = kNullLine;
    {
      CoreLock lock(mu);  // NOTE [the core's lock passes by the tap]
      if (!enabled || stopped) return;
      int64_t task = torch::autograd::get_current_graph_task_id();
      pass = pass_for(task);
      line = passes[static_cast<size_t>(pass)].line;
      // NOTE [what a value costs] in recorder.py: by its dtype's width
      int64_t values_cost = 0;
      for (const auto& g : go) values_cost += value_cost(g);
      for (const auto& g : gi) values_cost += value_cost(g);
      if (acc) values_cost += 2 * (go.empty() ? cost_value : value_cost(go[0]));
      ++n_events;
      bytes_used += cost_event + values_cost;
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
          AccSeen seen{static_cast<int32_t>(events.size()), -1, 0};
          auto early = a->variable.defined()
              ? acc_early.find(a->variable.unsafeGetTensorImpl()) : acc_early.end();
          if (early != acc_early.end()) {
            ev.grad = early->second.event;
            seen.version = early->second.version;
            seen.impl = early->second.impl;
            acc_early.erase(early);
          } else if (a->variable.defined()) {
            const at::Tensor& grad = a->variable.grad();
            if (grad.defined()) {
              ev.grad = capture(grad);
              seen.version = version_of(grad);
              seen.impl = reinterpret_cast<intptr_t>(grad.unsafeGetTensorImpl());
            }
          }
          acc_events.push_back(seen);
          for (int32_t k = 0; k < ev.go_n; ++k) keep_copy(refs[static_cast<size_t>(ev.go_begin + k)]);
          keep_copy(ev.grad);
        }
        auto hc = hook_changes.empty() ? hook_changes.end() : hook_changes.find(node);
        ev.hc_begin = static_cast<int32_t>(refs.size());
        ev.hc_n = 0;
        if (hc != hook_changes.end()) {
          for (int32_t r : hc->second) refs.push_back(r);
          ev.hc_n = static_cast<int32_t>(hc->second.size() / 2);
          hook_changes.erase(hc);
        }
        if (relay) {  // passes its gradients on as they came, unless a module hook replaced them
          for (size_t i = 0; i < std::min(gi.size(), go.size()); ++i) {
            if (gi[i].defined() && go[i].defined() &&
                gi[i].unsafeGetTensorImpl() != go[i].unsafeGetTensorImpl()) {
              int32_t before = capture(go[i]);
              int32_t after = capture(gi[i]);
              refs.push_back(before);
              refs.push_back(after);
              ++ev.hc_n;
            }
          }
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
  core->on_done(node, index, acc, relay, grad_inputs, grad_outputs);
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

}  // namespace gradtrace
