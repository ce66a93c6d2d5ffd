// gradtrace capture core: the events array as canonical JSON.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

namespace ek = keys::event;
namespace hk = keys::hook_change;
// An event's keys, in the order events_json writes them (NOTE [the core's keys come from the
// models] in backend/gradtrace/schema/cxx_keys.py).
static_assert(keys::in_order({ek::changed_by_hook, ek::grad, ek::grad_inputs, ek::grad_outputs, ek::hook_changes,
                              ek::line, ek::node, ek::pass, ek::phase}));
static_assert(keys::in_order({hk::after, hk::before}));

// Where the ``key`` of the TensorValue written at ``begin`` of ``out`` goes: right after its
// ``dtype`` (a TensorValue's first key: ``write_value`` in values.h), or -1 when none is there.
inline int64_t value_key_at(const std::string& out, size_t begin) {
  constexpr std::string_view open = keys::tensor_value::dtype.open;
  size_t s = begin + open.size();  // its string value opens there
  if (out.compare(begin, open.size(), open) != 0 || s >= out.size() || out[s] != '"') return -1;
  size_t q = out.find('"', s + 1);
  if (q == std::string::npos || q + 1 >= out.size() || out[q + 1] != ',') return -1;
  return static_cast<int64_t>(q + 2);
}

// Called with the core's mutex held.
// The events array as canonical JSON; values spend ``budget`` numbers in document order
// (grad_outputs, grad_inputs, grad, hook changes: the order Python resolves them in), which
// is not the order of the keys: a first pass decides which references carry values.
std::pair<py::bytes, int64_t> events_json(Core& c, int64_t budget) {
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
  // NOTE [keys spliced into the core's JSON] in capture/keysplice.py: where each value's
  // ``key`` would go, found as it is written (``stats.h``'s ``event_candidates`` reads them)
  c.ref_at.assign(c.refs.size(), -1);
  c.grad_at.assign(c.events.size(), -1);
  auto key_at = [&](size_t begin) { return value_key_at(out, begin); };
  auto val = [&](int32_t id, bool w, int64_t& at_key) {
    if (id == kNone) { out += "null"; return; }
    size_t begin = out.size();
    if (w) {
      write_value(out, c.values[static_cast<size_t>(id)], true);
      at_key = key_at(begin);
      return;
    }
    auto [at, n] = written[static_cast<size_t>(id)];
    if (n != 0) {
      if (out.size() + n > out.capacity()) out.reserve(2 * (out.size() + n));
      out.append(out.data() + at, n);  // no reallocation now: the source stays valid
      at_key = key_at(begin);
      return;
    }
    write_value(out, c.values[static_cast<size_t>(id)], false);
    written[static_cast<size_t>(id)] = {begin, out.size() - begin};
    at_key = key_at(begin);
  };
  auto list = [&](int32_t begin, int32_t n) {
    out.push_back('[');
    for (int32_t k = 0; k < n; ++k) {
      if (k) out.push_back(',');
      size_t r = static_cast<size_t>(begin + k);
      val(c.refs[r], with[r], c.ref_at[r]);
    }
    out.push_back(']');
  };
  out.push_back('[');
  for (size_t i = 0; i < c.events.size(); ++i) {
    const Event& ev = c.events[i];
    bool forward = ev.pass < 0;  // a forward event: no gradients, no hook changes
    if (i) out.push_back(',');
    out += ek::changed_by_hook.open;
    out += ev.hc_n ? "true" : "false";
    out += ek::grad.next;
    if (forward) out += "null"; else val(ev.grad, grad_with[i], c.grad_at[i]);
    out += ek::grad_inputs.next;
    if (forward) out += "null"; else list(ev.gi_begin, ev.gi_n);
    out += ek::grad_outputs.next;
    if (forward) out += "null"; else list(ev.go_begin, ev.go_n);
    if (ev.hc_n) {
      out += ek::hook_changes.next;
      out.push_back('[');
      for (int32_t k = 0; k < ev.hc_n; ++k) {
        size_t b = static_cast<size_t>(ev.hc_begin + 2 * k);
        if (k) out.push_back(',');
        out += hk::after.open;
        val(c.refs[b + 1], with[b + 1], c.ref_at[b + 1]);
        out += hk::before.next;
        val(c.refs[b], with[b], c.ref_at[b]);
        out.push_back('}');
      }
      out.push_back(']');
    }
    out += ek::line.next;
    if (ev.line == kNullLine) out += "null"; else format_int(out, ev.line);
    out += ek::node.next;
    out += "\"n";
    format_int(out, ev.node);
    out.push_back('"');
    out += ek::pass.next;
    if (forward) out += "null"; else format_int(out, ev.pass);
    out += ek::phase.next;
    out += forward ? "\"forward\"}" : "\"backward\"}";
  }
  out.push_back(']');
  return {py::bytes(out), budget};
}

}  // namespace gradtrace
