// The value steps' norms as the document writes them (NOTE [a leaf's value around each step]
// in capture/valuesteps.py): each the float64 that the fewest digits reading back as the same
// float32 denote, ``float(str(numpy.float32(x)))``, for a whole list in one call. Its Python
// twin is ``f32_twin`` in capture/valueleaves.py; both write the same numbers (tests/capture/
// test_value_steps.py).
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "json.h"

namespace gradtrace {

// NaN and the infinities pass as themselves (as float32): the caller writes them as strings.
inline std::vector<double> float32_values(const std::vector<double>& xs) {
  std::vector<double> out;
  out.reserve(xs.size());
  std::string text;
  for (double x : xs) {
    float f = static_cast<float>(x);
    if (!std::isfinite(f)) {
      out.push_back(static_cast<double>(f));
      continue;
    }
    text.clear();
    format_float32(text, x);
    double back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    out.push_back(back);
  }
  return out;
}

}  // namespace gradtrace

#include <ATen/EmptyTensor.h>

namespace gradtrace {

// NOTE [a loop's look in one check] in capture/valuesteps.py, in one call: the leaves of a look
// that took one copy of them all (CPU leaves of one dtype, each contiguous), as that look saw
// them. ``look`` checks the next look's leaves against them (the same objects in the same
// order, each with its data where it was, of the same shape, still contiguous) and, where they
// hold, copies them into one fresh flat buffer (memcpy: no dispatch, so neither autograd nor
// the output tap's dispatch mode sees it) and reads each leaf's ``at`` (its
// ``grad_history``'s length less one); else it answers None and the look goes leaf by leaf.
// Its Python twin is ``ValueSteps.accumulated``'s own check and ``Group.copy``: the same
// copy of the same values.
class LeafGroup {
 public:
  explicit LeafGroup(const py::list& leaves) {
    for (py::handle h : leaves) {
      if (!THPVariable_Check(h.ptr())) throw py::type_error("LeafGroup: a leaf that is not a tensor");
      const at::Tensor& t = THPVariable_Unpack(h.ptr());
      if (t.device().type() != c10::DeviceType::CPU || !t.is_contiguous() || t.is_neg() || t.is_conj())
        throw py::value_error("LeafGroup: only contiguous CPU leaves");
      if (!objs_.empty() && t.scalar_type() != dtype_) throw py::value_error("LeafGroup: leaves of one dtype");
      dtype_ = t.scalar_type();
      objs_.emplace_back(py::reinterpret_borrow<py::object>(h));
      ptrs_.push_back(t.const_data_ptr());
      shapes_.emplace_back(t.sizes().vec());
      bytes_.push_back(t.nbytes());
      total_ += t.nbytes();
    }
  }

  // ``pairs``: the look's (leaf, its node's document) pairs, in order.
  py::object look(const py::list& pairs) const {
    size_t n = objs_.size();
    if (static_cast<size_t>(PyList_GET_SIZE(pairs.ptr())) != n) return py::none();
    std::vector<const at::Tensor*> ts(n);
    for (size_t k = 0; k < n; ++k) {
      PyObject* pair = PyList_GET_ITEM(pairs.ptr(), k);
      if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) return py::none();
      PyObject* leaf = PyTuple_GET_ITEM(pair, 0);
      if (leaf != objs_[k].ptr()) return py::none();
      const at::Tensor& t = THPVariable_Unpack(leaf);
      if (t.const_data_ptr() != ptrs_[k] || !t.is_contiguous() || t.sizes() != c10::IntArrayRef(shapes_[k]))
        return py::none();
      ts[k] = &t;
    }
    py::list ats(n);
    for (size_t k = 0; k < n; ++k) {
      PyObject* doc = PyTuple_GET_ITEM(PyList_GET_ITEM(pairs.ptr(), k), 1);
      PyObject* history = PyDict_Check(doc) ? PyDict_GetItemString(doc, "grad_history") : nullptr;
      if (history == nullptr || !PyList_Check(history)) return py::none();
      ats[k] = py::int_(PyList_GET_SIZE(history) - 1);
    }
    at::Tensor whole = at::detail::empty_cpu({static_cast<int64_t>(total_ / c10::elementSize(dtype_))}, dtype_,
                                             false, c10::nullopt);
    char* out = static_cast<char*>(whole.mutable_data_ptr());
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(out, ts[k]->const_data_ptr(), bytes_[k]);
      out += bytes_[k];
    }
    return py::make_tuple(py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(whole))), std::move(ats));
  }

 private:
  std::vector<py::object> objs_;
  std::vector<const void*> ptrs_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<size_t> bytes_;
  size_t total_ = 0;
  c10::ScalarType dtype_ = c10::ScalarType::Float;
};

}  // namespace gradtrace
