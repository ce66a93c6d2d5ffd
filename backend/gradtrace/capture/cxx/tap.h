// gradtrace capture core: the forward-output tap (``OutputTap`` in capture/outputs.py is its
// Python twin; NOTE [forward outputs through a key of the tap's own] there).
//
// NOTE [the tap in C++]
//     A Python dispatch mode costs ~11 us per aten op before it does anything (GRU-200 runs
//     11,000 ops: 0.12 s, four times the bare program), so the tap is a boxed C++ fallback on
//     a dispatch key of its own, included in the recording thread's local key set while a
//     block records. The key (``TESTING_ONLY_GenericMode``: the one key torch leaves free for
//     a process-wide mode) sits above autograd, so an op's outputs come back with their node
//     already set: each is held under ``(grad_fn, output_nr)`` at once, nothing waits for the
//     next op. An op that made no node (autograd's sequence number did not move) and writes
//     nothing costs one redispatch. Before an op writes into a tensor (``alias_info`` says
//     so), every output still held on that storage with its version unchanged is copied
//     (NOTE [copy on write] in outputs.py). What is held is charged to the core's keep budget
//     (one budget for gradients and forward values: NOTE [held within the budget] in
//     capture/tensorfile.py). No Python object is touched here: ops run with the GIL released.
//
// NOTE [held gradients copied before a write]
//     The gradients the backward hooks capture are held by alias too (``Core::keep_alias``),
//     and the program may write into their memory later: ``clip_grad_norm_``'s
//     ``_foreach_mul_``, ``p.grad.mul_``, ``zero_``, the engine's ``+=`` into an existing
//     ``.grad`` at the next backward. A gradient the engine stole for a leaf's ``.grad`` is
//     also the memory of the gradients it came through (``mm``'s transposed result,
//     ``TBackward0``'s input), so an edit of the ``.grad`` changes those too. Each such value
//     is listed by storage (``hold_value``) and copied before an op writes there, as a
//     forward output is, while the block records, backward passes included (the engine's
//     accumulation and the program's hooks run there, on the block's thread). What the tap
//     cannot see is left out as ``changed``, never written wrong: a write on another thread
//     moves the version, found at the end; a write that moves none (numpy, a ``data_ptr``)
//     into a ``.grad`` is found by its values at the recorder's next look (``GradEdits.check``
//     in capture/gradedits.py), which marks what was held there stale (``stale``). Such a
//     write anywhere else, or a kernel writing memory its schema does not name, is not seen.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <atomic>
#include <thread>

namespace gradtrace {

struct TapEntry {
  c10::intrusive_ptr<Node> node;  // none: a saved tensor no node made (``hold_saved``)
  int32_t nr = 0;
  at::Tensor tensor;     // the output (an alias until a write would change it, then a copy)
  int64_t version = 0;
  bool copied = false;
  int64_t dropped = 0;   // bytes not held: the budget was spent
};

// NOTE [held by storage, in chains]
//     Each held output (and each gradient held by alias) is listed under its storage so that a
//     write there copies it first. A vector per storage cost an allocation per output on the
//     ops' path; instead a storage maps to the last link made for it, and links (what is held,
//     the link made before it for the same storage) live in one pool that grows by doubling, so
//     holding an output allocates nothing in the common case. A chain is walked newest first;
//     the order does not matter: each copy is of its own tensor.
struct TapLink {
  int32_t item;  // the entry (or the core's value) held
  int32_t next;  // the link made before it for the same storage; -1: none
};

struct PairHash {
  size_t operator()(const std::pair<const Node*, int32_t>& p) const noexcept {
    return std::hash<const void*>()(p.first) * 31u + static_cast<size_t>(p.second);
  }
};

constexpr c10::DispatchKey kTapKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

struct Tap {
  Core* core = nullptr;
  std::thread::id thread;
  int paused = 0;
  std::vector<TapEntry> entries;
  // open addressing (``ska::flat_hash_map``): one probe per output, no allocation per entry
  ska::flat_hash_map<std::pair<const Node*, int32_t>, int32_t, PairHash> seen;
  // NOTE [held by storage, in chains]: storage -> its last link in ``links``
  ska::flat_hash_map<const void*, int32_t> by_storage;
  std::vector<TapLink> links;
  std::vector<int32_t> held;  // entries holding a tensor, in the order they were held
  // NOTE [held gradients copied before a write]: the core's values held by alias, by storage
  // (filled by the backward hooks under ``Core::mu``, on any thread; read under it)
  ska::flat_hash_map<const void*, int32_t> values_by_storage;
  std::vector<TapLink> value_links;
  std::atomic<bool> values_held{false};

  // What the tap needs of an operator, read once per block (``OperatorEntry`` looks each up
  // in maps of its own): whether it is a composition of other ops, and which arguments it
  // writes into (NOTE [ops inside a kernel pass by the tap]).
  struct OpInfo {
    bool composite = false;
    bool is_mutable = false;
    c10::SmallVector<uint16_t, 2> writes;
  };
  ska::flat_hash_map<const c10::FunctionSchema*, OpInfo> ops;

  const OpInfo& op_info(const c10::OperatorHandle& op) {
    const c10::FunctionSchema* key = &op.schema();
    auto it = ops.find(key);
    if (it != ops.end()) return it->second;
    OpInfo info;
    info.composite = op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) ||
                     op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutogradNestedTensor);
    info.is_mutable = key->is_mutable();
    const auto& args = key->arguments();
    for (size_t i = 0; i < args.size(); ++i) {
      const auto* alias = args[i].alias_info();
      if (alias != nullptr && alias->isWrite()) info.writes.push_back(static_cast<uint16_t>(i));
    }
    return ops.emplace(key, std::move(info)).first->second;
  }

  static void link(ska::flat_hash_map<const void*, int32_t>& heads, std::vector<TapLink>& pool,
                   const void* data, int32_t item) {
    if (pool.size() == pool.capacity()) pool.reserve(std::max<size_t>(4096, 2 * pool.capacity()));
    auto [it, fresh] = heads.emplace(data, -1);
    pool.push_back(TapLink{item, it->second});
    it->second = static_cast<int32_t>(pool.size() - 1);
  }

  static int64_t version_of(const at::Tensor& t) {
    return static_cast<int64_t>(t.unsafeGetTensorImpl()->version_counter().current_version());
  }

  void note(const at::Tensor& t) {
    if (!t.defined() || t.layout() != at::kStrided || t.is_nested() || t.is_inference()) return;
    if (t.key_set().has_any(c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::FuncTorchBatched,
                                                 c10::DispatchKey::FuncTorchGradWrapper}))) {
      return;  // a subclass, a fake tensor (dynamo tracing), a transform's wrapper
    }
    c10::intrusive_ptr<Node> fn;
    try {  // NOTE [a view's grad_fn read after an in-place change] in capture/gradfn.py
      fn = t.grad_fn();
    } catch (const c10::Error&) {
      return;
    }
    if (!fn) return;
    if (t._fw_grad(0).defined()) return;  // forward AD's dual tensors: the twin leaves dual levels alone
    auto key = std::make_pair(static_cast<const Node*>(fn.get()), static_cast<int32_t>(t.output_nr()));
    int32_t idx = static_cast<int32_t>(entries.size());
    auto [slot, fresh] = seen.emplace(key, idx);  // one probe: seen, or listed now
    if (!fresh) return;
    if (entries.size() == entries.capacity()) {  // thousands per run: no small steps' moves
      entries.reserve(std::max<size_t>(4096, 2 * entries.capacity()));
      held.reserve(entries.capacity());
    }
    entries.emplace_back();
    TapEntry& e = entries.back();
    e.node = std::move(fn);
    e.nr = key.second;
    int64_t nbytes = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
    std::lock_guard<std::mutex> lock(core->mu);
    if (core->kept_bytes + nbytes > core->keep_budget) {
      e.dropped = nbytes > 0 ? nbytes : 1;
    } else {
      core->charge(nbytes);
      e.tensor = t;
      e.version = version_of(t);
      if (t.has_storage()) link(by_storage, links, t.storage().data(), idx);  // NOTE [held by storage, in chains]
      held.push_back(idx);
    }
  }

  // NOTE [saved tensors from no node] in saved.py (``OutputTap.hold_saved``): an alias of a
  // saved tensor no node made, held as a forward value is (charged to the one keep budget,
  // let go of by ``evict`` in the same order, copied before an op the tap sees writes into
  // its memory). Its entry's index; with ``Core::mu`` held.
  int32_t hold_saved(const at::Tensor& t, int64_t nbytes) {
    TapEntry e;
    e.nr = -1;
    int32_t idx = static_cast<int32_t>(entries.size());
    if (core->kept_bytes + nbytes > core->keep_budget) {
      e.dropped = nbytes > 0 ? nbytes : 1;
    } else {
      Unseen unseen(t);  // ``tensor_data`` asks a dispatch mode of the program's to detach
      e.tensor = t.tensor_data();  // no dispatch; shares the version counter
      e.version = core->version_of(t);
      core->charge(nbytes);
      if (t.has_storage()) link(by_storage, links, t.storage().data(), idx);  // NOTE [held by storage, in chains]
      held.push_back(idx);
    }
    entries.push_back(std::move(e));
    return idx;
  }

  // ``OutputTap.evict``: the last held let go first, so the same run lets go of the same ones.
  int64_t evict(int64_t need) {
    int64_t freed = 0;
    while (freed < need && !held.empty()) {
      TapEntry& e = entries[static_cast<size_t>(held.back())];
      held.pop_back();
      int64_t nbytes = e.tensor.defined() ? static_cast<int64_t>(e.tensor.numel()) * e.tensor.element_size() : 0;
      e.tensor = at::Tensor();
      e.dropped = nbytes > 0 ? nbytes : 1;
      freed += nbytes;
    }
    return freed;
  }

  void copy_before_write(const OpInfo& info, const torch::jit::Stack& stack, size_t base) {
    for (uint16_t i : info.writes) {
      const c10::IValue& v = stack[base + i];
      if (v.isTensor()) {
        copy_held(v.toTensor());
      } else if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorVector()) copy_held(t);
      }
    }
  }

  void copy_held(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const void* data = t.storage().data();
    if (values_held.load(std::memory_order_acquire)) copy_values(data);
    auto it = by_storage.find(data);
    if (it == by_storage.end()) return;
    int32_t ln = it->second;
    by_storage.erase(it);
    c10::impl::ExcludeDispatchKeyGuard off(kTapKey);
    at::AutoDispatchBelowADInplaceOrView below;  // a plain copy: no node, no version bump
    for (; ln >= 0; ln = links[static_cast<size_t>(ln)].next) {
      TapEntry& e = entries[static_cast<size_t>(links[static_cast<size_t>(ln)].item)];
      if (e.copied || !e.tensor.defined() || version_of(e.tensor) != e.version) continue;
      Unseen unseen(e.tensor);
      e.tensor = e.tensor.clone();
      e.copied = true;
    }
  }

  // NOTE [held gradients copied before a write]: value ``id``'s alias of ``t``; ``Core::mu`` held.
  void hold_value(int32_t id, const at::Tensor& t) {
    if (!t.has_storage()) return;
    link(values_by_storage, value_links, t.storage().data(), id);  // NOTE [held by storage, in chains]
    values_held.store(true, std::memory_order_release);
  }

  // The values held on storage ``data``, still as captured, copied (``Core::keep_copy``'s copy).
  void copy_values(const void* data) {
    std::lock_guard<std::mutex> lock(core->mu);
    auto it = values_by_storage.find(data);
    if (it == values_by_storage.end()) return;
    int32_t ln = it->second;
    values_by_storage.erase(it);
    c10::impl::ExcludeDispatchKeyGuard off(kTapKey);
    at::AutoDispatchBelowADInplaceOrView below;  // a plain copy: no node, no version bump
    for (; ln >= 0; ln = value_links[static_cast<size_t>(ln)].next) {
      int32_t id = value_links[static_cast<size_t>(ln)].item;
      Value& v = core->values[static_cast<size_t>(id)];
      if (v.kept_copy || !v.kept.defined() || core->version_of(v.kept) != v.kept_version) continue;
      try {
        Unseen unseen(v.kept);
        v.kept = v.kept.clone();
        v.kept_copy = true;
      } catch (const std::exception&) {  // cannot be copied: found changed at the end
      }
    }
  }

  // A write no op announced on ``t``'s memory (numpy, a kernel that moves no version), found
  // afterwards by its values (``GradEdits.check``): what was held there by alias is no longer
  // what was recorded, and will be left out as ``changed`` rather than written wrong.
  void stale(const at::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const void* data = t.storage().data();
    {
      std::lock_guard<std::mutex> lock(core->mu);
      auto it = values_by_storage.find(data);
      if (it != values_by_storage.end()) {
        for (int32_t ln = it->second; ln >= 0; ln = value_links[static_cast<size_t>(ln)].next) {
          Value& v = core->values[static_cast<size_t>(value_links[static_cast<size_t>(ln)].item)];
          if (!v.kept_copy && v.kept.defined()) v.kept_version = kStale;
        }
        values_by_storage.erase(it);
      }
    }
    auto it = by_storage.find(data);
    if (it == by_storage.end()) return;
    for (int32_t ln = it->second; ln >= 0; ln = links[static_cast<size_t>(ln)].next) {
      TapEntry& e = entries[static_cast<size_t>(links[static_cast<size_t>(ln)].item)];
      if (!e.copied && e.tensor.defined()) e.version = kStale;
    }
    by_storage.erase(it);
  }
  static constexpr int64_t kStale = -2;  // no version counter reads this (an inference tensor's: -1)

  void forget_values() {
    values_by_storage.clear();
    value_links.clear();
    values_held.store(false, std::memory_order_release);
  }
};

void hold_value_in_tap(Tap* tap, int32_t id, const at::Tensor& t) { tap->hold_value(id, t); }

int64_t evict_outputs(Tap* tap, int64_t need) { return tap->evict(need); }
int32_t hold_saved_in_tap(Tap* tap, const at::Tensor& t, int64_t nbytes) { return tap->hold_saved(t, nbytes); }

// NOTE [ops inside a kernel pass by the tap]
//     An op that is not a composition of other ops (no ``CompositeImplicitAutograd`` kernel)
//     makes its node, if any, in its own autograd kernel, which runs the rest below autograd
//     (``AutoDispatchBelowADInplaceOrView``): the ops its kernel calls in turn (the empty
//     outputs, the copies, the reductions of a CPU kernel) can make no node, so the tap is
//     left out of the thread's keys while it runs. Each of them cost a boxed round trip
//     here before (on GRU-200 most of the 11,000 ops the tap saw). An op composed of others
//     keeps the tap: its parts make the nodes, and each part's outputs are held.
inline Tap*& active_tap() {
  static Tap* tap = nullptr;
  return tap;
}

inline void tap_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  auto rest = ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kTapKey);
  Tap* tap = active_tap();
  if (tap == nullptr || tap->thread != std::this_thread::get_id() ||
      c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode)) {
    // a functorch transform (vmap, grad) is active: its levels' tensors are no forward outputs
    op.redispatchBoxed(rest, stack);
    return;
  }
  const auto& schema = op.schema();
  const Tap::OpInfo& info = tap->op_info(op);
  size_t nargs = schema.arguments().size();
  size_t base = stack->size() - nargs;
  if (info.is_mutable && (!tap->by_storage.empty() || tap->values_held.load(std::memory_order_acquire))) {
    tap->copy_before_write(info, *stack, base);  // backward passes too: NOTE [held gradients copied before a write]
  }
  if (tap->paused > 0) {  // a backward's ops are no forward outputs
    op.redispatchBoxed(rest, stack);
    return;
  }
  uint64_t mark = at::sequence_number::peek();
  bool is_mutable = info.is_mutable;  // ``info`` may move if the op adds to ``ops``
  if (info.composite) {
    op.redispatchBoxed(rest, stack);  // its parts are ops of their own, each tapped
  } else {
    // NOTE [ops inside a kernel pass by the tap]
    c10::impl::ExcludeDispatchKeyGuard inside(kTapKey);
    op.redispatchBoxed(rest, stack);
  }
  if (at::sequence_number::peek() == mark && !is_mutable) return;  // no node made, nothing written
  size_t nret = schema.returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    const c10::IValue& v = (*stack)[i];
    if (v.isTensor()) {
      tap->note(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) tap->note(t);
    }
  }
}

}  // namespace gradtrace

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&gradtrace::tap_fallback>());
}

// NOTE [detach and alias pass by the tap's key] in capture/tapkernel.py: the Python twin's kernel
// cannot see them without breaking ``nn.Parameter`` and ``as_subclass``; both kernel sets let
// them through untapped, so an alias's output (its input's numbers) is held on neither.
TORCH_LIBRARY_IMPL(aten, TESTING_ONLY_GenericMode, m) {
  m.impl("detach", torch::CppFunction::makeFallthrough());
  m.impl("alias", torch::CppFunction::makeFallthrough());
}
