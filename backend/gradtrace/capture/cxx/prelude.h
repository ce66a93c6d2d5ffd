// gradtrace capture core: the headers every part uses, and the shared constants.
#pragma once

#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/DynamicTypes.h>
#include <c10/core/GradMode.h>
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <frameobject.h>
#include <c10/util/flat_hash_map.h>
#include <c10/util/SmallVector.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <charconv>
#include <tuple>
#include <string_view>
#include <type_traits>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace py = pybind11;
using torch::autograd::Node;
using torch::autograd::variable_list;

namespace gradtrace {

constexpr int64_t kValuesLimit = 1000;
constexpr int64_t kArgListLimit = 8;  // saved.ARG_LIST_LIMIT (NOTE [saved arguments] in saved.py)
constexpr int32_t kNone = -1;          // value id of a None gradient
constexpr int32_t kNullLine = INT32_MIN;
// The mangled name of a custom Function's node class (``PyNode``), whose type_info
// libtorch_python does not export: compared by name. Every torch and CPython internal the
// core relies on is listed in NOTE [what the core relies on] (build_native.py).
constexpr const char* kPyNode = "N5torch8autograd6PyNodeE";

// NOTE [the recorder's ops unseen] in capture/unseen.py: every ATen op the core runs for
// itself (a copy, a move to the CPU) runs under this guard, so that what the program runs to
// watch its ops (a profiler, a dispatch mode of its own) sees only the program's: the Python
// dispatch keys excluded, and record functions off where some observer is registered
// (turning them off and on copies the thread's callbacks and rebuilds them, a microsecond
// each time, and ``encode`` runs for every value captured).
class Unseen {
 public:
  // ``t``: the tensor the guarded ops run on; a tensor whose own ops run Python code (a
  // subclass: NOTE [tensor subclasses] in odd_tensors.py) keeps its Python dispatch.
  explicit Unseen(const at::Tensor& t) {
    if (!t.defined() || !t.key_set().has(c10::DispatchKey::Python)) {
      no_modes_.emplace(c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
    }
    if (at::hasCallbacks()) unrecorded_.emplace();
  }

 private:
  std::optional<c10::impl::ExcludeDispatchKeyGuard> no_modes_;
  std::optional<at::DisableRecordFunctionGuard> unrecorded_;
};

}  // namespace gradtrace
