"""What a function node saved for its backward: names, shapes, bytes, parameter or input,
and the values of small ones.

NOTE [reading saved tensors]
    Built-in nodes expose each saved value as ``_saved_<name>``; custom ``autograd.Function``
    nodes (the ``ctx``) expose ``saved_tensors``. Reading them *unpacks* the saved variable,
    which is harmless right after the node was created, except when ``saved_tensors_hooks`` are
    active: then unpacking runs the user's (or checkpoint's) unpack hook, which may recompute
    a whole block. The recorder therefore never reads saved tensors while such hooks are
    installed (the node is marked ``saved_unread``). The recorder itself never installs
    ``saved_tensors_hooks``, so autograd's version-counter check stays in force: an in-place
    change of a saved tensor still raises exactly as it would without gradtrace.

NOTE [saved values]
    A saved tensor of at most ``VALUES_LIMIT`` elements is captured as a value of the core
    (``core.capture``: copied as it is now, right after its node was made, which is what
    autograd saved: a later in-place change makes backward refuse it anyway), the same for
    built-in nodes and custom Functions' ``ctx``. Its TensorValue is written as the saved
    entry's ``value``, spending the document's values budget (NOTE [document size] in
    values.py) after the events, in node order: past the budget it carries stats only. Larger
    saved tensors get no ``value``: reducing every big activation to stats at each node's
    creation would slow the forward pass for numbers nobody asked for.

NOTE [what counts as a parameter or an input]
    ``is_parameter``: an ``nn.Parameter`` or a view of one (``W.t()`` saved by ``addmm``).
    ``is_input``: any other leaf tensor (data the snippet fed in). Neither: an activation, an
    intermediate result produced by the graph itself; these are what backward frees.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.autograd.graph import Node

from gradtrace.capture.values import dtype_name
from gradtrace.schema import VALUES_LIMIT

_ATTRS: dict[type, tuple[str, ...]] = {}


def saved_attrs(node: Node) -> tuple[str, ...]:
    """The attributes that hold what nodes of this class saved (cached per class; empty for
    most view and add nodes, which save nothing)."""
    cls = type(node)
    attrs = _ATTRS.get(cls)
    if attrs is None:
        names = dir(node)
        if "saved_tensors" in names and "_raw_saved_tensors" in names:
            attrs = ("saved_tensors",)
        else:
            attrs = tuple(a for a in names if a.startswith("_saved_"))
        _ATTRS[cls] = attrs
    return attrs


def parameter_of(t: torch.Tensor) -> nn.Parameter | None:
    """The parameter ``t`` is, or is a view of."""
    # issubclass on the type: nn.Parameter's metaclass makes isinstance() slow
    if issubclass(type(t), nn.Parameter):
        return t  # type: ignore[return-value]
    base = t._base
    return base if base is not None and issubclass(type(base), nn.Parameter) else None  # type: ignore[return-value]


Private = tuple[nn.Parameter | None, int | None]
"""What the recorder keeps of a saved tensor but never writes out: the parameter it is (or
views), to count each parameter once, and its storage address, to match in-place changes."""


def _entry(name: str, t: torch.Tensor) -> tuple[dict[str, Any], Private]:
    nbytes = t.numel() * t.element_size()
    param = parameter_of(t)
    e = {"name": name, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "bytes": nbytes,
         "is_parameter": param is not None,
         "is_input": param is None and t.grad_fn is None and t._base is None,
         "freed_after_pass": None}
    ptr = None
    with contextlib.suppress(Exception):  # storage address: to match in-place changes, never shown
        ptr = t.untyped_storage().data_ptr()
    return e, (param, ptr)


def read_saved(node: Node, attrs: tuple[str, ...], capture: Callable[[torch.Tensor], int] | None = None,
               ) -> tuple[list[dict[str, Any]], list[Private], int]:
    """The saved tensors of ``node`` (in its ``attrs``: :func:`saved_attrs`) as complete entries,
    what is kept of each privately, and their total bytes. Non-tensor saved values (sizes,
    scalars) are skipped: they hold no graph memory worth showing. ``capture``: the core's,
    for small ones' values (NOTE [saved values]); their entries' ``value`` is the value id
    until the document is written. (The C++ core's ``walk`` does the same, faster.)"""
    out: list[dict[str, Any]] = []
    private: list[Private] = []
    total = 0
    for attr in attrs:
        try:
            value = getattr(node, attr)
        except Exception:  # already freed, or unreadable for this node
            continue
        name = attr.removeprefix("_saved_")
        if isinstance(value, torch.Tensor):
            items = [(name, value)]
        elif isinstance(value, tuple | list):
            items = [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
        else:
            continue
        for label, t in items:
            try:
                e, priv = _entry(label, t)
            except Exception:
                continue
            if capture is not None and t.numel() <= VALUES_LIMIT:
                e["value"] = capture(t)
            out.append(e)
            private.append(priv)
            total += e["bytes"]
    return out, private, total


def saved_hooks_active() -> bool:
    """Whether ``saved_tensors_hooks`` (checkpoint, offloading, user hooks) are installed now."""
    try:
        return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
    except Exception:
        return False
