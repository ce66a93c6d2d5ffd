"""Where in the snippet are we, and by which name does the snippet reach an object?

NOTE [the snippet's frames]
    The snippet is whatever code object was compiled with the snippet's file name (``<snippet>``
    for :func:`gradtrace.capture.run_snippet`, the caller's file for ``gradtrace.record``).
    "The line" of anything is the line of the innermost frame of that file on the current stack:
    for an op inside ``nn.Linear.forward`` it is the snippet line that called the model, and for
    an op inside a function or ``nn.Module`` defined *in* the snippet it is the line in that
    function. The walk goes up from the caller with ``f_back``: no ``inspect.stack()``, which
    would read source files and cost milliseconds.

NOTE [names]
    A tensor's name is the variable bound to that very object (``is``, never ``==``): first in
    the snippet's globals, then in the innermost snippet frame's locals; else a parameter path
    ``var.sub.weight`` under an ``nn.Module`` variable. Private names (``_x``) and the
    predefined ``torch``/``nn``/``F`` are skipped.

NOTE [where a tensor lives]
    A loop's variable outlives its loop: after ``for k, p in model.named_parameters(): ...``
    the global ``p`` is the last parameter, and after ``for w in ws: ...`` it is ``ws[-1]``.
    Such a name says where the loop stopped, not what the tensor is, so a deep index (the one
    that names the graph when the document is built) names a tensor first by a variable that
    is no loop's target, then by where it lives: its module path (``model.2.bias``), else its
    place in a list, tuple or dict variable (``ws[3]``, ``d["a"]``, one level down); a loop's
    variable names it only when nothing else does. The loops' targets are read from the
    snippet's source (:func:`loop_targets`).
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
from types import FrameType
from typing import Any

import torch
from torch import nn


def snippet_frame(filename: str, depth: int = 2) -> FrameType | None:
    """The innermost frame of the snippet file, starting ``depth`` frames above the caller."""
    try:
        f: FrameType | None = sys._getframe(depth)
    except ValueError:
        return None
    while f is not None:
        if f.f_code.co_filename == filename:
            return f
        f = f.f_back
    return None


_TORCH_DIR = os.path.dirname(torch.__file__)
_OWN_DIR = os.path.dirname(__file__)
_OVERRIDES_PY = os.path.join(_TORCH_DIR, "overrides.py")
_WRAPPERS = {os.path.join(_TORCH_DIR, "_jit_internal.py"),  # boolean_dispatch (F.max_pool2d)
             os.path.join(_TORCH_DIR, "utils", "_contextlib.py")}  # context-manager decorators


def direct_caller(filename: str, depth: int = 2) -> FrameType | None:
    """The snippet frame that called torch *directly*, or None when the call came from other
    library code (an optimizer, ``gradcheck``, a module's forward).

    NOTE [who called torch]
        Above the mode's handler sit either the caller of a C-implemented torch function
        itself (``x.detach()``: the snippet, or library code), or torch's Python dispatch
        (``torch/overrides.py``) under the torch function written in Python that was called
        (``torch.norm``, ``Tensor.norm``), maybe inside a wrapper that only dispatches
        (``boolean_dispatch``, a ``no_grad`` decorator); the snippet must come right after.
        Before, every frame of torch's directory was skipped, so ``gradcheck``'s own
        ``.detach()`` and ``.data`` were taken for cuts the snippet made on its line."""
    try:
        f: FrameType | None = sys._getframe(depth)
    except ValueError:
        return None
    while f is not None and f.f_code.co_filename.startswith(_OWN_DIR):
        f = f.f_back
    if f is not None and f.f_code.co_filename == _OVERRIDES_PY:
        while f is not None and f.f_code.co_filename == _OVERRIDES_PY:
            f = f.f_back
        if f is not None and f.f_code.co_filename.startswith(_TORCH_DIR):
            f = f.f_back  # the torch function written in Python that the snippet called
        while f is not None and f.f_code.co_filename in _WRAPPERS:
            f = f.f_back
    if f is not None and f.f_code.co_filename == filename:
        return f
    return None


_FUNCTION_PY = os.path.join(_TORCH_DIR, "autograd", "function.py")


def inside_custom_function(frame: FrameType | None) -> bool:
    """Whether ``frame`` runs inside an ``autograd.Function``'s forward or backward (autograd
    switches grad mode off there; that is not a cut the snippet made)."""
    while frame is not None:
        if frame.f_code.co_filename == _FUNCTION_PY:
            return True
        frame = frame.f_back
    return False


def snippet_line(filename: str, depth: int = 3) -> int | None:
    """The current line of the innermost snippet frame (1-based), or None outside the snippet."""
    f = snippet_frame(filename, depth)
    return f.f_lineno if f is not None else None


def _namespaces(frame: FrameType | None) -> list[dict[str, Any]]:
    if frame is None:
        return []
    spaces = [frame.f_globals]
    if frame.f_locals is not frame.f_globals:
        spaces.append(frame.f_locals)
    return spaces


def loop_targets(filename: str) -> frozenset[str]:
    """The names bound by a ``for`` statement anywhere in the snippet's source (NOTE [where a
    tensor lives]); empty when the source cannot be read or parsed."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor):
            found.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return frozenset(found)


_CONTAINER_ITEMS = 4096
"""At most this many items of one list, tuple or dict are named (NOTE [where a tensor lives])."""


def _container_items(key: str, value: Any) -> list[tuple[str, Any]]:
    """``(ws[3], item)`` for the items of a list or tuple, ``(d["a"], item)`` for a dict's
    string keys: the places a tensor or module can live one level down."""
    if isinstance(value, list | tuple):
        return [(f"{key}[{i}]", item) for i, item in enumerate(value[:_CONTAINER_ITEMS])]
    if isinstance(value, dict):
        return [(f"{key}[{k!r}]", item) for k, item in list(value.items())[:_CONTAINER_ITEMS]
                if isinstance(k, str | int)]
    return []


class NameIndex:
    """Names of the tensors and modules reachable from the snippet's variables.

    ``deep`` also walks every module variable's submodules and parameters (``model.0.weight``);
    that costs a walk over all modules, so during the run the recorder builds shallow indexes
    (plus deep ones over a function's locals, which vanish when it returns) and names what is
    still unnamed with one deep index over the globals when the document is built.
    """

    def __init__(self, frame: FrameType | None, spaces: list[dict[str, Any]] | None = None, *,
                 deep: bool = True, loop_vars: frozenset[str] = frozenset()) -> None:
        self._spaces = spaces if spaces is not None else _namespaces(frame)
        self._deep = deep
        self._loop_vars = loop_vars if deep else frozenset()
        """Names that come last (NOTE [where a tensor lives]); a shallow index keeps them."""
        self._names: dict[int, str] | None = None
        self._paths: dict[int, dict[int, str]] = {}
        """Deep indexes: each parameter's first path under each module holding it (several
        modules when tied; one module reached from two variables is one)."""
        self._keep: list[Any] = []

    @classmethod
    def during_run(cls, frame: FrameType | None) -> NameIndex:
        """Shallow over globals, deep over the locals of a function frame."""
        index = cls(frame, deep=False)
        if frame is not None and frame.f_locals is not frame.f_globals:
            index._local = cls(None, [frame.f_locals], deep=True)
        return index

    _local: NameIndex | None = None

    def _build(self) -> dict[int, str]:
        names: dict[int, str] = {}
        modules: list[tuple[str, nn.Module]] = []
        later: list[tuple[str, Any]] = []
        """Loop variables (NOTE [where a tensor lives]): named after everything else."""
        containers: list[tuple[str, Any]] = []
        for space in self._spaces:
            for key, value in list(space.items()):
                if key.startswith("_"):
                    continue
                if key in self._loop_vars:
                    later.append((key, value))
                elif isinstance(value, torch.Tensor | nn.Module):
                    names.setdefault(id(value), key)
                    self._keep.append(value)
                    if isinstance(value, nn.Module):
                        modules.append((key, value))
                elif self._deep and isinstance(value, list | tuple | dict):
                    containers.append((key, value))
        if not self._deep:
            return names
        self._walk_modules(names, modules)
        for key, value in containers:
            inner = []
            for path, item in _container_items(key, value):
                if isinstance(item, torch.Tensor | nn.Module):
                    names.setdefault(id(item), path)
                    self._keep.append(item)
                    if isinstance(item, nn.Module):
                        inner.append((path, item))
            self._walk_modules(names, inner)
        for key, value in later:
            if isinstance(value, torch.Tensor | nn.Module):
                names.setdefault(id(value), key)
                self._keep.append(value)
                if isinstance(value, nn.Module):
                    self._walk_modules(names, [(key, value)])
        return names

    def _walk_modules(self, names: dict[int, str], modules: list[tuple[str, nn.Module]]) -> None:
        """Name each module's submodules and parameters by path (first path wins)."""
        for key, module in modules:
            try:
                # one walk for modules and parameters: ``named_parameters`` would walk the
                # modules again (same names: first path wins, as its de-duplication does)
                subs = list(module.named_modules(prefix=key))
                for sub, child in subs:
                    names.setdefault(id(child), sub)
                    self._keep.append(child)
                for sub, child in subs:
                    for pname, param in child._parameters.items():
                        if param is not None:
                            path = f"{sub}.{pname}" if sub else pname
                            names.setdefault(id(param), path)
                            self._paths.setdefault(id(param), {}).setdefault(id(child), path)
                            self._keep.append(param)
            except Exception:  # a snippet's broken module must not break the recorder
                continue

    def paths_of(self, obj: object) -> list[str]:
        """Every module path of the parameter ``obj`` in a deep index, in walk order: several
        when it is tied (``emb.weight`` and ``lm_head.weight``)."""
        if self._names is None:
            self._names = self._build()
        return list(self._paths.get(id(obj), {}).values())

    def name_of(self, obj: object) -> str | None:
        if self._names is None:
            self._names = self._build()
        name = self._names.get(id(obj))
        if name is None and self._local is not None:
            name = self._local.name_of(obj)
        return name


def name_through_transforms(names: NameIndex, t: torch.Tensor) -> str | None:
    """NOTE [names inside torch.func transforms]: ``grad(f)(x)``, ``jacrev``, ``vjp`` and
    ``vmap`` hand the function a functorch wrapper of the snippet's tensor, a leaf of the
    transform's own graph that no variable holds; it is named by the tensor it wraps (``x``),
    unwrapped level by level, before the name the transformed function gives its argument."""
    inner = t
    depth = 0
    while depth < 8 and _is_wrapped(inner):
        inner = _unwrapped(inner)
        name = names.name_of(inner)
        if name is not None:
            return name
        depth += 1
    return names.name_of(t)


_is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_unwrapped = torch._C._functorch.get_unwrapped
