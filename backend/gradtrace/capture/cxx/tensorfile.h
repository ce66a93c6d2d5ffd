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
//     The bytes are allocated at once but their pages are touched only as they are written
//     (a large allocation is fresh memory from the system), so the file's memory grows as the
//     held tensors are let go (NOTE [each tensor let go once written] in capture/tensorfile.py).
//     Those first touches are most of the write for a file of a few large tensors (a 3.7 MB
//     file: about 2 ms of faults against 1 ms of copying). ``MADV_HUGEPAGE`` on the file's
//     aligned middle halves them, but is not asked for: where the system's THP ``defrag`` is
//     ``madvise`` (a common default) the fault may then compact memory in place, a stall that
//     a loaded sandbox host would feel more than the faults.
#pragma once

#include <ATen/ATen.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gradtrace {

// NOTE [each tensor let go once written] in capture/tensorfile.py: ``tensors`` is the only
// holder left of what the file keeps; each item is set to None once its bytes are in the file,
// so what is held shrinks as the file grows.
constexpr int64_t kTrimEvery = 16 << 20;  // ``4 * WRITE_BATCH`` in capture/tensorfile.py

// A strided tensor this small is copied here element by element: ATen's ``copy_`` costs
// microseconds of dispatch for each, and a run holds thousands of small transposes and slices.
// Larger ones go to ``copy_`` (vectorized, threaded). The same bits either way (a copy to the
// same dtype).
constexpr int64_t kSmallStrided = 1 << 14;

template <typename T>
void copy_strided(char* dst, const at::Tensor& t) {
  const T* src = static_cast<const T*>(t.const_data_ptr());
  T* out = reinterpret_cast<T*>(dst);
  const int64_t nd = t.dim();
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  c10::SmallVector<int64_t, 8> idx(static_cast<size_t>(nd), 0);
  const int64_t n = t.numel();
  const int64_t inner = nd ? sizes[nd - 1] : 1, step = nd ? strides[nd - 1] : 0;
  int64_t off = 0;
  for (int64_t i = 0; i < n; i += inner) {
    T v;
    for (int64_t j = 0; j < inner; ++j) {  // memcpy: an element need not be aligned in the file
      std::memcpy(&v, src + off + j * step, sizeof(T));
      std::memcpy(out + i + j, &v, sizeof(T));
    }
    for (int64_t d = nd - 2; d >= 0; --d) {  // the next row: carry through the outer dimensions
      size_t k = static_cast<size_t>(d);
      if (++idx[k] < sizes[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (sizes[d] - 1);
      idx[k] = 0;
    }
  }
}

// Whether ``t`` (CPU, no lazy negation, not a zero tensor) was copied here (``copy_strided``).
inline bool copied_small(char* dst, const at::Tensor& t) {
  if (t.numel() > kSmallStrided || !t.device().is_cpu() || t.is_neg() || t.is_conj()) return false;
  switch (t.element_size()) {
    case 1: copy_strided<uint8_t>(dst, t); return true;
    case 2: copy_strided<uint16_t>(dst, t); return true;
    case 4: copy_strided<uint32_t>(dst, t); return true;
    case 8: copy_strided<uint64_t>(dst, t); return true;
    default: return false;
  }
}

// ``t``'s ``n`` bytes, row-major, at ``at_`` in the file (the caller holds the guards of
// ``write_tensor_file``: plain copies, no node, no version bump, not seen by the tap).
inline void copy_into(char* at_, const at::Tensor& t, int64_t n) {
  if (n == 0) {
  } else if (t._is_zerotensor()) {
    std::memset(at_, 0, static_cast<size_t>(n));
  } else if (t.device().is_cpu() && !t.is_neg() && t.is_contiguous()) {
    std::memcpy(at_, t.const_data_ptr(), static_cast<size_t>(n));
  } else if (copied_small(at_, t)) {
  } else if (reinterpret_cast<uintptr_t>(at_) % static_cast<uintptr_t>(t.element_size()) == 0) {
    // its elements straight into the file, row-major: no contiguous copy of it first
    at::from_blob(at_, t.sizes(), at::TensorOptions().dtype(t.scalar_type())).copy_(t);
  } else {  // an offset its dtype cannot be read at (after an odd-sized tensor)
    at::Tensor c = t.cpu().resolve_neg().contiguous();
    std::memcpy(at_, c.const_data_ptr(), static_cast<size_t>(n));
  }
}

inline py::object write_tensor_file(const py::bytes& head, const py::list& tensors, int64_t body) {
  char* hp = nullptr;
  Py_ssize_t hn = 0;
  if (PyBytes_AsStringAndSize(head.ptr(), &hp, &hn) != 0) throw py::error_already_set();
  PyObject* out = PyBytes_FromStringAndSize(nullptr, hn + static_cast<Py_ssize_t>(body));
  if (out == nullptr) throw py::error_already_set();
  char* dst = PyBytes_AS_STRING(out);
  std::memcpy(dst, hp, static_cast<size_t>(hn));
  int64_t off = 0, trimmed = 0;
  try {
    c10::impl::ExcludeDispatchKeyGuard no_tap(kTapKey);
    at::AutoDispatchBelowADInplaceOrView below;  // plain copies: no node, no version bump
    // Each item read in place (``THPVariable_Unpack`` of the list's own reference) and let go
    // through the C API: pybind's caster and item accessor cost more than a small tensor's copy
    // (a refcounted ``at::Tensor``, an isinstance, temporaries).
    PyObject* items = tensors.ptr();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); ++i) {
      PyObject* item = PyList_GET_ITEM(items, i);
      {
        if (!THPVariable_Check(item)) throw std::runtime_error("tensor file: an item that is not a tensor");
        const at::Tensor& t = THPVariable_Unpack(item);
        int64_t n = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
        if (off + n > body) throw std::runtime_error("tensor file: the tensors pass the header's sizes");
        copy_into(dst + hn + off, t, n);
        off += n;
      }
      Py_INCREF(Py_None);  // written: let go (the tensor's last holder, as a rule)
      PyList_SET_ITEM(items, i, Py_None);
      Py_DECREF(item);
#if defined(__GLIBC__)
      if (off - trimmed >= kTrimEvery) {  // what was let go goes back to the system
        malloc_trim(0);
        trimmed = off;
      }
#endif
    }
    if (off != body) throw std::runtime_error("tensor file: the tensors fall short of the header's sizes");
  } catch (...) {
    Py_DECREF(out);
    throw;
  }
  return py::reinterpret_steal<py::object>(out);
}

}  // namespace gradtrace
