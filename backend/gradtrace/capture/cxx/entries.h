// gradtrace capture core: function-node entries and their JSON.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

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

  // NOTE [entries move]: ``Shape`` and ``SmallVector``'s moves are not noexcept, so without
  // these a growing vector of them copied every element (strings, shapes, saved entries,
  // Python references) at each doubling: ``entries_`` holds a GRU-200's 3,200 entries.
  OutMeta() = default;
  OutMeta(const OutMeta&) = default;
  OutMeta(OutMeta&&) noexcept = default;
  OutMeta& operator=(const OutMeta&) = default;
  OutMeta& operator=(OutMeta&&) noexcept = default;
};

struct SavedEntry {
  std::string name;
  Shape shape;
  at::ScalarType dtype = at::kFloat;
  int64_t bytes = 0;
  bool is_param = false, is_input = false, has_ptr = false;
  int32_t freed_after = -1;
  uintptr_t ptr = 0;  // storage address: to match an in-place change (never written)
  int32_t vid = -1;   // its value as saved (small tensors: NOTE [saved values] in saved.py)
  // held for the tensor file, with its version then, or the bytes not held past the cap
  // (NOTE [saved tensors from no node] in saved.py)
  at::Tensor kept;
  int64_t kept_version = -1, kept_dropped = 0;
  int32_t held = -1;  // its entry in the output tap while the tap holds it (``Tap::hold_saved``)
  py::object param;   // the parameter, or None: to count it once (never written)

  // NOTE [entries move]
  SavedEntry() = default;
  SavedEntry(const SavedEntry&) = default;
  SavedEntry(SavedEntry&&) noexcept = default;
  SavedEntry& operator=(const SavedEntry&) = default;
  SavedEntry& operator=(SavedEntry&&) noexcept = default;
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
  bool saved_once = false;  // NOTE [reading saved tensors] in saved.py
  std::vector<SavedEntry> saved;
  int64_t saved_bytes = 0;
  std::string args;  // ``saved_args``' JSON object, or empty (NOTE [saved arguments] in saved.py)
  c10::SmallVector<std::pair<int64_t, int64_t>, 4> edges;  // (input_nr, source node index)
  std::string var;  // the snippet variable bound to its output, or empty (``set_var``)

  // NOTE [entries move]
  FnEntry() = default;
  FnEntry(const FnEntry&) = default;
  FnEntry(FnEntry&&) noexcept = default;
  FnEntry& operator=(const FnEntry&) = default;
  FnEntry& operator=(FnEntry&&) noexcept = default;
};

static_assert(std::is_nothrow_move_constructible_v<FnEntry>);
static_assert(std::is_nothrow_move_constructible_v<SavedEntry>);

// A string as ``json.dumps(ensure_ascii=False)`` writes it (UTF-8 passes through). Most
// (names, paths, dtypes) need no escape: they are appended whole after one scan.
void write_str(std::string& out, std::string_view s) {
  bool plain = true;
  for (unsigned char ch : s) {
    if (ch < 0x20 || ch == '"' || ch == '\\') { plain = false; break; }
  }
  if (plain) {
    out.reserve(out.size() + s.size() + 2);
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
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

// ``"device":..,"dtype":..`` of one forward output, ``device`` being the key with what goes
// before it (``open`` or ``next``): a node's (after ``cut``) or an OutputMeta's (first).
void write_meta(std::string& out, const OutMeta* o, std::string_view device, const keys::Key& dtype) {
  out += device;
  if (o == nullptr || !o->known) {
    out += "null";
    out += dtype.next;
    out += "null";
    return;
  }
  if (o->device.is_cpu()) out += "\"cpu\"";  // ``Device::str`` makes a string each time
  else write_str(out, o->device.str());
  out += dtype.next;
  write_str(out, dtype_text(o->dtype));
}

// A function node's keys, a saved tensor's and an output's, in the order write_entry writes
// them (NOTE [the core's keys come from the models] in backend/gradtrace/schema/cxx_keys.py).
static_assert(keys::in_order({keys::node::created_in_pass, keys::node::cut, keys::node::device, keys::node::dtype,
                              keys::node::grad, keys::node::grad_history, keys::node::id, keys::node::kind,
                              keys::node::line, keys::node::module, keys::node::module_stack, keys::node::name,
                              keys::node::outputs, keys::node::role, keys::node::saved, keys::node::saved_args,
                              keys::node::saved_bytes, keys::node::saved_once, keys::node::saved_unread,
                              keys::node::seq, keys::node::shape, keys::node::value, keys::node::var}));
static_assert(keys::in_order({keys::saved_tensor::bytes, keys::saved_tensor::dtype,
                              keys::saved_tensor::freed_after_pass, keys::saved_tensor::is_input,
                              keys::saved_tensor::is_parameter, keys::saved_tensor::name,
                              keys::saved_tensor::shape, keys::saved_tensor::value}));
static_assert(keys::in_order({keys::output_meta::device, keys::output_meta::dtype, keys::output_meta::shape}));

// One function node's entry, every field as the document writes it, keys sorted
// (NOTE [documents without pydantic on the hot path] in document.py). ``values``: the core's
// values and, per saved tensor with a value, whether it carries its numbers (the budget's
// choice, ``nodes_json``); null leaves saved values out (``infos``).
void write_entry(std::string& out, const FnEntry& e, const std::vector<Value>* values = nullptr,
                 const uint8_t* with = nullptr) {
  namespace nk = keys::node;
  namespace sk = keys::saved_tensor;
  namespace ok = keys::output_meta;
  out += nk::created_in_pass.open;
  if (e.created_in_pass < 0) out += "null"; else format_int(out, e.created_in_pass);
  out += nk::cut.next;
  out += "null";
  const OutMeta* first = e.outs.empty() ? nullptr : &e.outs[0];
  write_meta(out, first, nk::device.next, nk::dtype);
  out += nk::grad.next;
  out += "null";
  out += nk::grad_history.next;
  out += "[]";
  out += nk::id.next;
  write_id(out, e.index);
  out += nk::kind.next;
  out += "\"function\"";
  out += nk::line.next;
  if (e.line == kNullLine) out += "null"; else format_int(out, e.line);
  out += nk::module.next;
  write_pystr(out, e.module);
  if (!e.module.is_none()) {  // a ModulePath: its stack's canonical JSON (NOTE [module calls])
    static PyObject* stack_json = PyUnicode_InternFromString("stack_json");  // immutable, kept
    py::object js = py::reinterpret_steal<py::object>(PyObject_GetAttr(e.module.ptr(), stack_json));
    if (!js) throw python_error();
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(js.ptr(), &n);
    if (p == nullptr) throw python_error();
    out += nk::module_stack.next;
    out.append(p, static_cast<size_t>(n));
  }
  out += nk::name.next;
  write_str(out, *e.name);
  if (e.outs.size() > 1) {
    out += nk::outputs.next;
    out.push_back('[');
    for (size_t i = 0; i < e.outs.size(); ++i) {
      if (i) out.push_back(',');
      write_meta(out, &e.outs[i], ok::device.open, ok::dtype);
      out += ok::shape.next;
      if (e.outs[i].known) write_ints(out, e.outs[i].shape); else out += "null";
      out.push_back('}');
    }
    out.push_back(']');
  }
  out += nk::role.next;
  out += "null";
  out += nk::saved.next;
  out.push_back('[');
  for (size_t i = 0; i < e.saved.size(); ++i) {
    const SavedEntry& s = e.saved[i];
    if (i) out.push_back(',');
    out += sk::bytes.open;
    format_int(out, s.bytes);
    out += sk::dtype.next;
    write_str(out, dtype_text(s.dtype));
    out += sk::freed_after_pass.next;
    if (s.freed_after < 0) out += "null"; else format_int(out, s.freed_after);
    out += sk::is_input.next;
    out += s.is_input ? "true" : "false";
    out += sk::is_parameter.next;
    out += s.is_param ? "true" : "false";
    out += sk::name.next;
    write_str(out, s.name);
    out += sk::shape.next;
    write_ints(out, s.shape);
    if (values != nullptr && s.vid >= 0) {
      out += sk::value.next;
      write_value(out, (*values)[static_cast<size_t>(s.vid)], with[i] != 0);
    }
    out.push_back('}');
  }
  out.push_back(']');
  if (!e.args.empty()) {
    out += nk::saved_args.next;
    out += e.args;
  }
  out += nk::saved_bytes.next;
  format_int(out, e.saved_bytes);
  if (e.saved_once) { out += nk::saved_once.next; out += "true"; }
  if (e.saved_unread) { out += nk::saved_unread.next; out += "true"; }
  out += nk::seq.next;
  format_int(out, e.seq);
  out += nk::shape.next;
  if (first != nullptr && first->known) write_ints(out, first->shape); else out += "null";
  out += nk::value.next;
  out += "null";
  if (!e.var.empty()) {
    out += nk::var.next;
    write_str(out, e.var);
  }
  out.push_back('}');
}

}  // namespace gradtrace
