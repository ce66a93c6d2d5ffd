"""The records behind a run's value steps (capture/valuesteps.py): each followed leaf with its
waiting copies, the group of leaves a loop's looks copy at once, and the norms written at
float32 precision. The NOTEs they follow are in valuesteps.py: [one copy per look], [a loop's
look in one check], [a leaf's value around each step]."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import torch

from gradtrace.capture import native
from gradtrace.capture.odd_tensors import runs_python_ops

_native_f32 = native.core.float32_values if native.default_native() and native.core is not None else None
"""The core's ``float32_values`` where recorders run on the core (``GRADTRACE_KERNELS``)."""
_native_group = native.core.LeafGroup if native.default_native() and native.core is not None else None
"""The core's ``LeafGroup`` (cxx/valuesteps.h) where recorders run on the core."""


def f32_twin(xs: list[float]) -> list[float]:
    """The Python twin of the core's ``float32_values`` (cxx/valuesteps.h): each of ``xs`` as
    the shortest text that reads back as the same float32 reads, ``str(np.float32(x))``."""
    out: list[float] = np.asarray(xs, dtype=np.float32).astype(str).astype(np.float64).tolist()
    return out


def f32(xs: list[float]) -> list[Any]:
    """Norms as the document writes them: float32 precision (the shortest text that reads back
    as the same float32), NaN and ±inf as strings; in the C++ core when the recorder runs on
    it (a numpy conversion to text and back costs about 1 µs a number), else in its twin."""
    out: list[Any] = (_native_f32 or f32_twin)(xs)
    for k, x in enumerate(out):
        if not math.isfinite(x):
            out[k] = "nan" if math.isnan(x) else "inf" if x > 0 else "-inf"
    return out


def as_tensor(whole: torch.Tensor | np.ndarray) -> torch.Tensor:
    """A look's one copy as a tensor (one numpy took shares its memory)."""
    return whole if isinstance(whole, torch.Tensor) else torch.from_numpy(whole)


def followed(t: torch.Tensor) -> bool:
    try:
        return (t.layout == torch.strided and not t.is_nested and t.is_floating_point() and t.device.type != "meta"
                and t.numel() > 0 and not runs_python_ops(t))
    except Exception:
        return False


def copy_flat(leaf: torch.Tensor) -> torch.Tensor:
    """A copy of ``leaf``'s value, flat and contiguous (NOTE [one copy per look])."""
    return leaf.clone(memory_format=torch.contiguous_format).view(-1)


class Leaf:
    """One followed leaf: its value at the last look compared (``values[0]``), then the copies
    taken at later looks, not yet compared, each with its ``at``; every copy flat. The parts
    of a look's one copy join them when they are compared (``ValueSteps.joined``), or before
    a copy of the leaf's own follows them."""

    __slots__ = ("ats", "doc", "flat", "kind", "leaf", "nbytes", "ptr", "shape", "values")

    def __init__(self, leaf: torch.Tensor, doc: dict[str, Any]) -> None:
        self.leaf, self.doc = leaf, doc
        self.values: list[torch.Tensor] = [copy_flat(leaf)]
        self.ats: list[int] = []
        self.nbytes = leaf.numel() * leaf.element_size()
        self.shape, self.kind = leaf.shape, (leaf.dtype, leaf.device)
        self.ptr = -1
        """``data_ptr()`` of the leaf when ``flat`` was taken: the view holds while it holds."""
        self.flat: torch.Tensor | None = None
        """A flat view of the leaf's data, when it is contiguous (NOTE [one copy per look])."""


_NUMPY = {torch.float16, torch.float32, torch.float64}
"""Dtypes a CPU leaf's flat view is copied in as numpy (NOTE [a loop's look in one check])."""

FIRST, SECOND, HISTORY = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter("grad_history")
PTR, SHAPE, FLAT = operator.methodcaller("data_ptr"), operator.attrgetter("shape"), \
    operator.methodcaller("is_contiguous")


class Group:
    """The leaves of a look that took one copy of them all, as that look saw them (NOTE [a
    loop's look in one check])."""

    __slots__ = ("arrays", "flats", "leaves", "native", "nbytes", "ptrs", "shapes", "sizes", "slots")

    def __init__(self, slots: list[Leaf], flats: list[torch.Tensor]) -> None:
        self.slots, self.flats = slots, flats
        self.leaves = [s.leaf for s in slots]
        self.ptrs = [s.ptr for s in slots]
        self.shapes = [s.shape for s in slots]
        self.sizes = [f.numel() for f in flats]
        self.nbytes = sum(s.nbytes for s in slots)
        self.arrays: list[np.ndarray] | None = None
        """The flat views as numpy sees them, where numpy can (NOTE [a loop's look in one check])."""
        self.native: Any = None
        """The core's check and copy of the next look in one call (cxx/valuesteps.h), where the
        recorder runs on the core and the leaves are CPU leaves; else the check runs in Python."""
        if _native_group is not None and all(s.kind[1].type == "cpu" for s in slots):
            try:
                self.native = _native_group(self.leaves)
            except (ValueError, TypeError):
                self.native = None
        if all(s.kind[0] in _NUMPY and s.kind[1].type == "cpu" for s in slots):
            try:
                self.arrays = [f.numpy() for f in flats]
            except (RuntimeError, TypeError):
                self.arrays = None

    def copy(self) -> torch.Tensor:
        """One copy of the leaves through their flat views, past autograd and the output tap's
        dispatch mode (outputs.py), for leaves numpy cannot see (``arrays`` None)."""
        grad_was = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            with torch._C._DisableTorchDispatch():
                return torch.cat(self.flats)
        finally:
            torch._C._set_grad_enabled(grad_was)
