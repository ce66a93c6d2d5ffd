// gradtrace capture core: dtype and device names, interned keys, small Python helpers.
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

// ``str(device)``, cached ("cpu" for nearly every node).
PyObject* device_str(const c10::Device& device) {
  static std::unordered_map<std::string, PyObject*>* names = new std::unordered_map<std::string, PyObject*>();
  std::string s = device.str();
  auto it = names->find(s);
  if (it == names->end()) {
    it = names->emplace(s, PyUnicode_InternFromString(s.c_str())).first;
  }
  Py_INCREF(it->second);
  return it->second;
}

// ------------------------------------------------------------------------- Python objects

// Interned keys (a dict stores the key's hash with it: no hashing per node) and a setter that
// steals the value's reference. Building ~20 entries per node through pybind11's
// ``d["key"] = value`` decoded and hashed each key anew: 3x slower.
struct Keys {
  PyObject *kind, *id, *name, *line, *module, *shape, *dtype, *device, *grad, *seq, *role,
      *created_in_pass, *value, *grad_history, *cut, *outputs, *saved, *saved_bytes,
      *saved_unread, *bytes, *is_parameter, *is_input, *freed_after_pass, *input_nr, *source,
      *target, *function;
  Keys() {
#define GT_KEY(k) k = PyUnicode_InternFromString(#k)
    GT_KEY(kind); GT_KEY(id); GT_KEY(name); GT_KEY(line); GT_KEY(module); GT_KEY(shape);
    GT_KEY(dtype); GT_KEY(device); GT_KEY(grad); GT_KEY(seq); GT_KEY(role); GT_KEY(created_in_pass);
    GT_KEY(value); GT_KEY(grad_history); GT_KEY(cut); GT_KEY(outputs); GT_KEY(saved);
    GT_KEY(saved_bytes); GT_KEY(saved_unread); GT_KEY(bytes); GT_KEY(is_parameter);
    GT_KEY(is_input); GT_KEY(freed_after_pass); GT_KEY(input_nr); GT_KEY(source); GT_KEY(target);
    GT_KEY(function);
#undef GT_KEY
  }
};

const Keys& interned() {
  static const Keys* k = new Keys();  // never freed: lives as long as the interpreter
  return *k;
}

// d[key] = value, stealing ``value`` (a new reference; NULL means a Python error is set).
inline void put(PyObject* d, PyObject* key, PyObject* value) {
  if (value == nullptr) throw python_error();
  int rc = PyDict_SetItem(d, key, value);
  Py_DECREF(value);
  if (rc < 0) throw python_error();
}

inline PyObject* none() { Py_RETURN_NONE; }

PyObject* id_str(int64_t index) {
  char buf[24];
  buf[0] = 'n';
  char* end = std::to_chars(buf + 1, buf + sizeof buf, index).ptr;
  return PyUnicode_FromStringAndSize(buf, end - buf);
}

PyObject* int_list(c10::IntArrayRef xs) {
  PyObject* l = PyList_New(static_cast<Py_ssize_t>(xs.size()));
  if (l == nullptr) throw python_error();
  for (size_t i = 0; i < xs.size(); ++i) PyList_SET_ITEM(l, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(xs[i]));
  return l;
}

}  // namespace gradtrace
