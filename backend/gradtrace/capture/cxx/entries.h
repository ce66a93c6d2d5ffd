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
  py::object param;   // the parameter, or None: to count it once (never written)
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
};

// A string as ``json.dumps(ensure_ascii=False)`` writes it (UTF-8 passes through).
void write_str(std::string& out, std::string_view s) {
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

// ``{"device":..,"dtype":..,"shape":..`` of one forward output (no closing brace).
void write_meta(std::string& out, const OutMeta* o) {
  if (o == nullptr || !o->known) {
    out += "\"device\":null,\"dtype\":null";
    return;
  }
  out += "\"device\":";
  write_str(out, o->device.str());
  out += ",\"dtype\":";
  write_str(out, dtype_text(o->dtype));
}

// One function node's entry, every field as the document writes it, keys sorted
// (NOTE [documents without pydantic on the hot path] in document.py). ``values``: the core's
// values and, per saved tensor with a value, whether it carries its numbers (the budget's
// choice, ``nodes_json``); null leaves saved values out (``infos``).
void write_entry(std::string& out, const FnEntry& e, const std::vector<Value>* values = nullptr,
                 const uint8_t* with = nullptr) {
  out += "{\"created_in_pass\":";
  if (e.created_in_pass < 0) out += "null"; else format_int(out, e.created_in_pass);
  out += ",\"cut\":null,";
  const OutMeta* first = e.outs.empty() ? nullptr : &e.outs[0];
  write_meta(out, first);
  out += ",\"grad\":null,\"grad_history\":[],\"id\":";
  write_id(out, e.index);
  out += ",\"kind\":\"function\",\"line\":";
  if (e.line == kNullLine) out += "null"; else format_int(out, e.line);
  out += ",\"module\":";
  write_pystr(out, e.module);
  if (!e.module.is_none()) {  // a ModulePath: its stack's canonical JSON (NOTE [module calls])
    py::object js = e.module.attr("stack_json");
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(js.ptr(), &n);
    if (p == nullptr) throw python_error();
    out += ",\"module_stack\":";
    out.append(p, static_cast<size_t>(n));
  }
  out += ",\"name\":";
  write_str(out, *e.name);
  if (e.outs.size() > 1) {
    out += ",\"outputs\":[";
    for (size_t i = 0; i < e.outs.size(); ++i) {
      if (i) out.push_back(',');
      out.push_back('{');
      write_meta(out, &e.outs[i]);
      out += ",\"shape\":";
      if (e.outs[i].known) write_ints(out, e.outs[i].shape); else out += "null";
      out.push_back('}');
    }
    out.push_back(']');
  }
  out += ",\"role\":null,\"saved\":[";
  for (size_t i = 0; i < e.saved.size(); ++i) {
    const SavedEntry& s = e.saved[i];
    if (i) out.push_back(',');
    out += "{\"bytes\":";
    format_int(out, s.bytes);
    out += ",\"dtype\":";
    write_str(out, dtype_text(s.dtype));
    out += ",\"freed_after_pass\":";
    if (s.freed_after < 0) out += "null"; else format_int(out, s.freed_after);
    out += s.is_input ? ",\"is_input\":true" : ",\"is_input\":false";
    out += s.is_param ? ",\"is_parameter\":true,\"name\":" : ",\"is_parameter\":false,\"name\":";
    write_str(out, s.name);
    out += ",\"shape\":";
    write_ints(out, s.shape);
    if (values != nullptr && s.vid >= 0) {
      out += ",\"value\":";
      write_value(out, (*values)[static_cast<size_t>(s.vid)], with[i] != 0);
    }
    out.push_back('}');
  }
  out.push_back(']');
  if (!e.args.empty()) {
    out += ",\"saved_args\":";
    out += e.args;
  }
  out += ",\"saved_bytes\":";
  format_int(out, e.saved_bytes);
  if (e.saved_once) out += ",\"saved_once\":true";
  if (e.saved_unread) out += ",\"saved_unread\":true";
  out += ",\"seq\":";
  format_int(out, e.seq);
  out += ",\"shape\":";
  if (first != nullptr && first->known) write_ints(out, first->shape); else out += "null";
  out += ",\"value\":null";
  if (!e.var.empty()) {
    out += ",\"var\":";
    write_str(out, e.var);
  }
  out.push_back('}');
}

}  // namespace gradtrace
