"""A warning is said where the program's own call made it, as without gradtrace.

NOTE [warnings from the tap]
    A torch call of the snippet reaches the torch-function mode (gradtrace/capture/mode.py),
    whose handler makes the call. A warning torch raises in C++ (``TORCH_WARN``: sparse
    invariants, nested tensors' prototype notice) is attributed to the innermost Python frame,
    and a Python torch function's ``warnings.warn(..., stacklevel=2)`` (``F.softmax`` without
    ``dim``) to its caller: both were then the handler. The printed location became
    ``gradtrace/capture/mode.py:180`` instead of the snippet's line, the "once per location"
    registry was the mode module's (a warning from two snippet lines printed once), and the
    module filters saw ``gradtrace.capture.mode`` (Python shows ``DeprecationWarning`` only
    for ``__main__``). And a warning from an op the recorder runs on its own (encoding a
    value) is one the bare program never prints.

    While a block records, one entry at the front of ``warnings.filters`` (:class:`WarningSite`)
    looks at each warning attributed to a gradtrace module (its module slot's ``match``, its
    category slot's ``__subclasscheck__``: the filter machinery asks them, and nothing else
    is called per warning). A warning from the handler's own call of the snippet's function
    is issued again (``warnings.warn_explicit``) from the frame the bare program would have
    named: the handler's caller, past torch's Python dispatch (``torch/overrides.py``) and the
    torch function that dispatched, as NOTE [who called torch] in frames.py describes. With
    that frame's file, line, module and registry, the filters, the registry and the printed
    text are the bare run's. Any other warning attributed to gradtrace (the recorder's own
    ops) is dropped. The entry answers "ignore" for those warnings only; every other warning
    goes on to the program's own filters untouched. Nothing is done per torch call.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from types import FrameType
from typing import Any

import torch

_PACKAGE = "gradtrace."
_TORCH_DIR = os.path.dirname(torch.__file__)
_DISPATCH_FILES = {os.path.join(_TORCH_DIR, "overrides.py"),
                   os.path.join(_TORCH_DIR, "_jit_internal.py"),  # boolean_dispatch (F.max_pool2d)
                   os.path.join(_TORCH_DIR, "utils", "_contextlib.py")}  # no_grad decorators


class _State(threading.local):
    def __init__(self) -> None:
        self.text: str | None = None
        self.module: str | None = None
        self.category: type[Warning] | None = None
        self.busy = False


_state = _State()


def _from_gradtrace(module: object) -> bool:
    return isinstance(module, str) and module.startswith(_PACKAGE)


class _AnyText:
    """The message slot: every text matches; it is kept for the re-issue."""

    def match(self, text: str) -> bool:
        if not _state.busy:
            _state.text = text
        return True


class _OurModule:
    """The module slot: matches warnings attributed to a gradtrace module."""

    def __init__(self, site: WarningSite) -> None:
        self.site = site

    def match(self, module: str) -> bool:
        ours = _from_gradtrace(module)
        if not _state.busy:
            _state.module = module
            self.site.maybe_reissue()
        return ours


class _CategoryMeta(type):
    site: WarningSite | None = None

    def __subclasscheck__(cls, category: Any) -> bool:
        if not _state.busy and cls.site is not None:
            _state.category = category
            cls.site.maybe_reissue()
        return True


class WarningSite:
    """The filter entry of NOTE [warnings from the tap], in ``warnings.filters`` until
    ``remove`` (a handle like the hooks', removed with them). ``pass_through``: the code
    objects of the handlers that make the snippet's own torch calls."""

    def __init__(self, pass_through: set[Any]) -> None:
        self.pass_through = pass_through
        category = _CategoryMeta("AnyWarning", (Warning,), {})
        category.site = self
        self.entry = ("ignore", _AnyText(), category, _OurModule(self), 0)
        # not ``_filters_mutated()``: that would forget every "already shown" of the program's
        # registries, and warnings shown once would show again (the entry acts only on warnings
        # attributed to gradtrace, whose registries it keeps empty)
        warnings.filters.insert(0, self.entry)  # type: ignore[attr-defined]

    def maybe_reissue(self) -> None:
        """Once the text, category and module of a warning are known: issue it again from the
        bare program's frame when gradtrace's handler made the call that raised it."""
        text, module, category = _state.text, _state.module, _state.category
        if text is None or module is None or category is None:
            return
        _state.text = _state.module = _state.category = None
        if not _from_gradtrace(module):
            return
        frame = self._bare_frame(module)
        if frame is None:
            return  # the recorder's own op: the bare program never made it
        g = frame.f_globals
        _state.busy = True
        try:
            warnings.warn_explicit(text, category, frame.f_code.co_filename, frame.f_lineno,
                                   module=g.get("__name__", "<string>"),
                                   registry=g.setdefault("__warningregistry__", {}), module_globals=g)
        finally:
            _state.busy = False

    def _bare_frame(self, module: str) -> FrameType | None:
        """The frame the warning names without gradtrace, or None for the recorder's own."""
        f: FrameType | None = sys._getframe(2)
        while f is not None and f.f_globals.get("__name__") != module:
            f = f.f_back  # the frame the warning was attributed to: innermost of that module
        if f is None or f.f_code not in self.pass_through:
            return None
        while f is not None and f.f_code in self.pass_through:
            f = f.f_back  # a handler called by another (``_marked`` calls ``_backward``)
        if f is not None and f.f_code.co_filename in _DISPATCH_FILES:
            # torch's Python dispatch: skip it, the torch function that dispatched and any
            # wrapper that only dispatches, to the caller of that function
            while f is not None and f.f_code.co_filename in _DISPATCH_FILES:
                f = f.f_back
            if f is not None:
                f = f.f_back
            while f is not None and f.f_code.co_filename in _DISPATCH_FILES:
                f = f.f_back
        return f

    def remove(self) -> None:
        filters: list[Any] = warnings.filters  # type: ignore[attr-defined,assignment]
        if self.entry in filters:
            filters.remove(self.entry)
