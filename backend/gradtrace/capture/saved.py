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
    change of a saved tensor still raises exactly as it would without gradtrace. Nor are the
    saved tensors of a custom Function whose class sets ``clear_saved_tensors_on_access``
    read (:func:`uses_up_saved`): its ``saved_tensors`` may be read once, and that once is
    the user's ``backward``'s; its nodes are marked ``saved_unread`` and ``saved_once`` (which
    is no checkpointing: gradtrace/analysis/compare/memory.py counts no recomputation for it). (A node exposes
    no shape of a saved tensor without unpacking it, so nothing of them is shown.)

NOTE [saved values]
    A saved tensor of at most ``VALUES_LIMIT`` elements is captured as a value of the core
    (``core.capture``: copied as it is now, right after its node was made, which is what
    autograd saved: a later in-place change makes backward refuse it anyway), the same for
    built-in nodes and custom Functions' ``ctx``. Its TensorValue is written as the saved
    entry's ``value``, spending the document's values budget (NOTE [document size] in
    values.py) after the events, in node order: past the budget it carries stats only. Larger
    saved tensors get no ``value``: reducing every big activation to stats at each node's
    creation would slow the forward pass for numbers nobody asked for.

NOTE [saved tensors from no node]
    The tensor file keeps every node's output, so a saved tensor that some node made is there
    already (a leaf's as its value). One that no node made, data without gradient such as
    ``xs[t]`` read by ``addmm`` or ``nll_loss``'s target, is held when its node is made (an
    alias sharing its version counter, like a gradient: NOTE [kept tensors] in tensorfile.py;
    copied before an op the tap sees writes into its memory, as a forward output is: a static
    input buffer refilled each iteration, ``x.copy_(batch)``; one changed where the tap does
    not see it is left out as ``changed``), only when the run keeps a tensor
    file, and written as ``n{id}.s{name}`` (its saved entry's ``name``), ranked with the
    forward values (NOTE [what the budget keeps first] in tensorfile.py). It is held as a
    forward output is, by the output tap (``Tap::hold_saved`` in cxx/tap.h,
    ``OutputTap.hold_saved``), charged to the run's one keep budget in the order things
    happen (past it: left out as ``budget``), and a gradient lets go of it as of the forward
    outputs held last (NOTE [held within the budget]). Explain reads it there
    (analysis/explain/operands.py). Its document entry is unchanged: the key is the reader's
    to form, found in the file's header or not.

NOTE [a saved parameter copied]
    A parameter (a leaf that requires grad) a node saved is no node's output either, but its
    value when first met (``n{id}.value``) is what the node saved only until an optimizer's
    step changes it, and that step runs where the capture steps aside (NOTE [optimizer steps]
    in library.py), so no write to it is seen. So, once a backward pass has run (a step may
    have followed it), it is held like the saved tensors above, as a copy made when its node
    is made (charged to the same budget; past it nothing is copied): Explain reads layer
    norm's or a convolution's weight at every iteration of a training loop, not only before
    the first step. Before the first backward pass no step can have changed it: its node saved
    the value first met, which Explain reads (analysis/explain/operands.py), so nothing is
    held, and a model run forward and backward once (a transformer whose linear layers save
    their weights) pays no copy of them. A tensor that requires no grad is held by alias, and
    one changed in place since is left out as ``changed``.

NOTE [running statistics copied]
    Batch norm's kernels update the running mean and variance they are given in place without
    moving their version counter, and its node saves those very buffers: an alias held for the
    file would silently read the next iteration's statistics (``tests/analysis/
    test_standard_practice.py`` caught a CNN's). So a saved ``running_mean`` or ``running_var``
    is held as a copy made when its node is made, as a parameter is.

NOTE [saved arguments]
    Besides tensors, built-in nodes save the op's small non-tensor arguments: ``pow``'s
    exponent, ``select``'s dim and index, ``slice``'s start, end and step, softmax's dim,
    ``nll_loss``'s reduction and ignore_index, ``add``'s alpha. The explanation of a node
    (gradtrace/analysis/explain/ops.py) needs them to write its rule with numbers, so each
    one that is a bool, an int, a float, a short name (``approximate="tanh"``) or a list of
    at most ``ARG_LIST_LIMIT`` ints goes into the entry's ``saved_args`` (absent when none).
    Left out: None (an optional argument not given, or a tensor slot autograd did not fill),
    anything else (dtypes, lists of floats), and the ``*_sym_*`` attributes (sizes, strides,
    numels: shapes the document already has). Autograd's binding hands int64 arguments to
    Python as unsigned (``dim=-1`` reads 18446744073709551615): they are read back as the
    signed int64 they are. Non-finite floats are the strings ``"nan"``, ``"inf"``, ``"-inf"``.

NOTE [what counts as a parameter or an input]
    ``is_parameter``: an ``nn.Parameter`` or a view of one (``W.t()`` saved by ``addmm``).
    ``is_input``: any other leaf tensor (data the snippet fed in). Neither: an activation, an
    intermediate result produced by the graph itself; these are what backward frees.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.autograd.graph import Node

from gradtrace.capture.values import dtype_name

_ATTRS: dict[type, tuple[str, ...]] = {}
ARG_LIST_LIMIT = 8
"""The longest list of ints kept as a saved argument (NOTE [saved arguments])."""
_ARG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,32}")
"""A string argument kept as it is (``approximate="tanh"``, ``rounding_mode="floor"``)."""


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
            attrs = tuple(a for a in names if a.startswith("_saved_") and "_sym_" not in a)
        _ATTRS[cls] = attrs
    return attrs


_ONCE: dict[type, bool] = {}


def uses_up_saved(node: Node) -> bool:
    """Whether reading ``node``'s ``saved_tensors`` would use up the one read its Function
    allows (``clear_saved_tensors_on_access = True`` on the class: NOTE [reading saved
    tensors]); cached per class. The C++ core's ``saved_attrs`` in cxx/walk.h is its twin."""
    cls = type(node)
    once = _ONCE.get(cls)
    if once is None:
        forward_cls = getattr(cls, "_forward_cls", None)
        once = _ONCE[cls] = bool(getattr(forward_cls, "clear_saved_tensors_on_access", False))
    return once


def parameter_of(t: torch.Tensor) -> nn.Parameter | None:
    """The parameter ``t`` is, or is a view of."""
    # issubclass on the type: nn.Parameter's metaclass makes isinstance() slow
    if issubclass(type(t), nn.Parameter):
        return t  # type: ignore[return-value]
    base = t._base
    return base if base is not None and issubclass(type(base), nn.Parameter) else None  # type: ignore[return-value]


def _int(v: int) -> int | None:
    """An int argument as the int64 it is (NOTE [saved arguments]), or None beyond 64 bits."""
    if -(2**63) <= v < 2**63:
        return v
    return v - 2**64 if 2**63 <= v < 2**64 else None


def saved_arg(value: object) -> object | None:
    """A non-tensor saved value as ``saved_args`` writes it, or None when it is not kept
    (NOTE [saved arguments]; ``read_saved_into`` in cxx/walk.h is its twin)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if _ARG_NAME.fullmatch(value) else None
    if isinstance(value, tuple | list) and len(value) <= ARG_LIST_LIMIT \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        ints = [_int(v) for v in value]
        return None if None in ints else ints
    return None


Private = tuple[nn.Parameter | None, int | None]
"""What the recorder keeps of a saved tensor but never writes out: the parameter it is (or
views), to count each parameter once, and its storage address, to match in-place changes."""


def _entry(name: str, t: torch.Tensor) -> tuple[dict[str, Any], Private]:
    if t.is_nested:  # no plain shape: skipped, as the C++ core skips it (NOTE [nested tensors] in odd_tensors.py)
        raise ValueError("a nested tensor")
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


PARTLY_WRITTEN: dict[str, frozenset[str]] = {"CtcLossBackward0": frozenset({"result1"}),
                                             "CtcLossBackward1": frozenset({"result1"})}
"""Saved results their kernel leaves partly unwritten, by node class: their entries have a
name, a shape and bytes, no value, and nothing of them goes to the tensor file (NOTE [a
kernel's workspace] in tensordoc.py; ``SavedAttr::scratch`` in cxx/walk.h reads this table)."""

RUNNING_STATS = frozenset({"running_mean", "running_var"})
"""Saved buffers a kernel changes in place without moving their version (NOTE [running
statistics copied]); ``kRunningStats`` in cxx/walk.h."""

KEPT = "_kept"
"""What a saved entry holds for the tensor file (Python's kernels; never written)."""


def read_saved(node: Node, attrs: tuple[str, ...],
               capture: Callable[[torch.Tensor, str], tuple[int, Any]] | None = None,
               ) -> tuple[list[dict[str, Any]], list[Private], int, dict[str, Any]]:
    """The saved tensors of ``node`` (in its ``attrs``: :func:`saved_attrs`) as complete entries,
    what is kept of each privately, their total bytes, and the node's small non-tensor saved
    arguments by name (NOTE [saved arguments]). ``capture``: the core's, giving a small
    tensor's value id (NOTE [saved values]; their entries' ``value`` is the value id until the
    document is written; -1 for none) and what is held of it for the tensor file (NOTE [saved
    tensors from no node]; None for nothing). (The C++ core's ``walk`` does the same, faster.)"""
    args: dict[str, Any] = {}
    out: list[dict[str, Any]] = []
    private: list[Private] = []
    total = 0
    scratch = PARTLY_WRITTEN.get(type(node).__name__, frozenset())
    for attr in attrs:
        try:
            value = getattr(node, attr)
        except Exception:  # already freed, or unreadable for this node
            continue
        name = attr.removeprefix("_saved_")
        if isinstance(value, torch.Tensor):
            items = [(name, value)]
        elif isinstance(value, tuple | list) and any(isinstance(v, torch.Tensor) for v in value):
            items = [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
        else:
            arg = saved_arg(value)
            if arg is not None:
                args[name] = arg
            continue
        for label, t in items:
            try:
                e, priv = _entry(label, t)
            except Exception:
                continue
            if capture is not None and name not in scratch:  # a kernel's scratch: name and size only
                vid, held = capture(t, label)
                if vid >= 0:
                    e["value"] = vid
                if held is not None:  # NOTE [saved tensors from no node]
                    e[KEPT] = held
            out.append(e)
            private.append(priv)
            total += e["bytes"]
    return out, private, total, args


def saved_hooks_active() -> bool:
    """Whether ``saved_tensors_hooks`` (checkpoint, offloading, user hooks) are installed now."""
    try:
        return torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
    except Exception:
        return False
