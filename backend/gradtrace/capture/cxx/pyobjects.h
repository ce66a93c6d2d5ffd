// gradtrace capture core: dtype names and node ids, as Python writes them.
// (one translation unit: ``_native.cpp`` includes every part in order)
#pragma once
#include "prelude.h"

namespace gradtrace {

// ------------------------------------------------------------------------- dtype names

// ``str(dtype)`` without ``torch.`` (Python's ``dtype_name``), cached per scalar type.
py::str dtype_str(at::ScalarType t) {
  static std::unordered_map<int, py::str>* names = new std::unordered_map<int, py::str>();
  auto it = names->find(static_cast<int>(t));
  if (it != names->end()) return it->second;
  py::object d = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(torch::getTHPDtype(t)));
  std::string s = py::str(d).cast<std::string>();
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  py::str name(s);
  names->emplace(static_cast<int>(t), name);
  return name;
}

const std::string& dtype_text(at::ScalarType t) {
  static std::unordered_map<int, std::string>* names = new std::unordered_map<int, std::string>();
  auto it = names->find(static_cast<int>(t));
  if (it == names->end()) {
    it = names->emplace(static_cast<int>(t), dtype_str(t).cast<std::string>()).first;
  }
  return it->second;
}

// ------------------------------------------------------------------------- Python objects

// ``n<index>``, a node's id.
PyObject* id_str(int64_t index) {
  char buf[24];
  buf[0] = 'n';
  char* end = std::to_chars(buf + 1, buf + sizeof buf, index).ptr;
  return PyUnicode_FromStringAndSize(buf, end - buf);
}

}  // namespace gradtrace
