// gradtrace capture core: the tensor file's bytes in one pass (``tensorfile.write``; its
// Python twin there is one ``torch.cat`` into a bytearray, then ``bytes``).
//
// NOTE [the file written once]
//     The file is made as the final ``bytes`` object itself (``PyBytes_FromStringAndSize``
//     with no contents, then filled before anyone sees it, as CPython's own constructors do):
//     the header, then each kept tensor's bytes copied straight from its memory, so the file
//     exists once, never as a buffer and then a copy of it, and a small tensor costs a
//     ``memcpy``, not a handful of torch calls. A tensor that is not plain row-major memory (a
//     transpose, an expanded scalar, a lazily negated view, autograd's zero tensor) is made so
//     first; what reaches the file is each element's value, the same bytes ``torch.cat`` gives.
#pragma once

#include <ATen/ATen.h>

namespace gradtrace {

inline py::object write_tensor_file(const py::bytes& head, const std::vector<at::Tensor>& tensors, int64_t body) {
  char* hp = nullptr;
  Py_ssize_t hn = 0;
  if (PyBytes_AsStringAndSize(head.ptr(), &hp, &hn) != 0) throw py::error_already_set();
  PyObject* out = PyBytes_FromStringAndSize(nullptr, hn + static_cast<Py_ssize_t>(body));
  if (out == nullptr) throw py::error_already_set();
  char* dst = PyBytes_AS_STRING(out);
  std::memcpy(dst, hp, static_cast<size_t>(hn));
  int64_t off = 0;
  try {
    c10::impl::ExcludeDispatchKeyGuard no_tap(kTapKey);
    at::AutoDispatchBelowADInplaceOrView below;  // plain copies: no node, no version bump
    for (const at::Tensor& t : tensors) {
      int64_t n = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
      if (n == 0) continue;
      if (off + n > body) throw std::runtime_error("tensor file: the tensors pass the header's sizes");
      char* at_ = dst + hn + off;
      if (t._is_zerotensor()) {
        std::memset(at_, 0, static_cast<size_t>(n));
      } else {
        at::Tensor c = t.device().is_cpu() ? t : t.cpu();
        if (c.is_neg()) c = c.resolve_neg();
        if (!c.is_contiguous()) c = c.contiguous();
        std::memcpy(at_, c.const_data_ptr(), static_cast<size_t>(n));
      }
      off += n;
    }
    if (off != body) throw std::runtime_error("tensor file: the tensors fall short of the header's sizes");
  } catch (...) {
    Py_DECREF(out);
    throw;
  }
  return py::reinterpret_steal<py::object>(out);
}

}  // namespace gradtrace
