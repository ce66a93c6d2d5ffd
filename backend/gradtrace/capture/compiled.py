"""gradtrace and ``torch.compile``: recording never changes what dynamo compiles or runs.

NOTE [invisible to dynamo]
    Dynamo meets gradtrace's code in two ways, and each must leave the compiled program exactly
    the bare one.

    *It traces through it.* Compiling a module call inlines ``nn.Module._call_impl`` with the
    global forward hooks (``ModuleTracker``'s), an optimizer's ``step`` runs its global step
    hooks (``LibraryCalls``'), a module built inside a compiled function meets the parameter
    registration hook (``watch_parameters``), and every torch call meets the torch-function
    mode's handler (``CaptureMode``). Each begins with ``if _is_compiling(): return``:
    dynamo folds ``torch.compiler.is_compiling()`` to True, so what it traces of them is a
    call that returns None (or the torch call itself): no op, no guard on the recorder's
    state, no graph break. A hook that did its work under tracing made dynamo fail
    ("UnspecializedBuiltinNNModuleVariable(Linear) is already tracked for mutation") or split
    the graph at ``sys._getframe`` and ``_get_sequence_nr`` (three ``CompiledFunctionBackward``
    where the bare run has one, and dynamo's warning in the snippet's output).
    ``torch._dynamo.disable`` would be wrong there: dynamo breaks the graph at a disabled
    function it meets while tracing.

    *It meets its frames.* While a compiled function runs, dynamo's frame hook (PEP 523) sees
    every Python frame that starts on the thread and compiles it unless told to skip it: a
    graph break's eager part calls the line tracer's ``on_step``, the Python kernels' node
    hooks, the module hooks of a module called there, the sandbox's captured stdout's
    ``write``. Dynamo then traced the recorder itself: it warned about ``sys._getframe``, its
    resumed frame got ``None`` from ``h.norm()``, and in the sandbox it failed reading
    ``gradtrace/capture/recorder.py`` (NOTE [gradtrace's source stays unreadable in the
    sandbox]). :func:`hide_from_dynamo` marks every code object of gradtrace's
    loaded modules "skip this frame" (what ``torch._dynamo.skip`` does, through the C module
    ``torch._C._dynamo.eval_frame``, which imports nothing: ``torch._dynamo`` costs seconds
    and a snippet may never compile). The mark is on the frame only; frames they call (a
    user's tensor hook that gradtrace wraps) are seen by dynamo as in the bare run. Inlining
    ignores the mark, hence the first half. A marked code object costs nothing while no
    compiled function runs.

NOTE [gradtrace's source stays unreadable in the sandbox]
    Dynamo reads (and hashes) the source file of every frame it traces. A job may read the
    interpreter and the libraries on ``sys.path`` (gradtrace/sandbox/namespaces.py); a
    development install's checkout is not among them, so reading ``recorder.py`` failed there
    (an installed wheel's would have been read). The fix is that dynamo never traces a
    gradtrace frame, not a wider jail: the job has no use for the service's source, a
    development checkout holds more than the package (tests, data, configuration), and a
    frame of gradtrace that dynamo did trace would change the compiled program anyway (one
    more graph break at least). Kept unreadable, the sandbox fails loudly should one ever be
    traced again, which ``tests/capture/test_faithful.py``'s service cases would show.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import torch

_is_compiling = torch.compiler.is_compiling
"""Dynamo folds this call to True while it traces (NOTE [invisible to dynamo])."""

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``gradtrace`` package's directory: only code objects of its files are marked."""

_done: set[str] = set()
"""The modules whose code objects are marked already."""
_seen_modules = 0
"""``len(sys.modules)`` at the last look: unchanged, nothing new can be there."""


def _skip_strategy() -> Any:
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:  # a torch built without dynamo: nothing to hide from
        return None
    return eval_frame, eval_frame._FrameExecStrategy(eval_frame._FrameAction.SKIP,
                                                     eval_frame._FrameAction.DEFAULT)


_SKIP = _skip_strategy()


def _codes_of(value: Any, depth: int = 0) -> list[types.CodeType]:
    """The code objects behind a module attribute: functions, the methods of classes (static,
    class and property methods too), and what they wrap."""
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    if isinstance(value, property):
        return [c for f in (value.fget, value.fset, value.fdel) if f is not None for c in _codes_of(f, depth)]
    if isinstance(value, types.FunctionType):
        codes = [value.__code__]
        wrapped = getattr(value, "__wrapped__", None)
        if wrapped is not None and depth < 2:
            codes += _codes_of(wrapped, depth + 1)
        return codes
    if isinstance(value, type) and depth < 2 and value.__module__.startswith("gradtrace"):
        return [c for v in list(vars(value).values()) for c in _codes_of(v, depth + 1)]
    return []


def _nested(code: types.CodeType) -> list[types.CodeType]:
    """``code`` and the code objects defined inside it (closures, lambdas, comprehensions)."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _nested(const)
    return found


def hide_from_dynamo() -> int:
    """Mark the frames of every gradtrace module loaded and not marked yet as frames dynamo's
    frame hook skips (NOTE [invisible to dynamo]); returns how many code objects it marked.
    Cheap once done: it looks only for modules loaded since."""
    global _seen_modules
    if _SKIP is None or len(sys.modules) == _seen_modules:
        return 0
    _seen_modules = len(sys.modules)
    eval_frame, strategy = _SKIP
    marked = 0
    for name, module in list(sys.modules.items()):
        if name in _done or not (name == "gradtrace" or name.startswith("gradtrace.")):
            continue
        _done.add(name)
        if module is None:
            continue
        for value in list(vars(module).values()):
            for code in _codes_of(value):
                if not code.co_filename.startswith(_PACKAGE_DIR):
                    continue  # an imported function of torch's or the standard library's
                for inner in _nested(code):
                    eval_frame.set_code_exec_strategy(inner, strategy)
                    marked += 1
    return marked


# NOTE [torch.compile(module) and global hooks]
#     ``torch.compile(model)`` returns an ``OptimizedModule`` whose call warns "Using
#     `torch.compile(module)` when there are global hooks on modules" whenever any global module
#     hook exists (``torch.nn.modules.module._has_any_global_hook``, read by that call only).
#     The module tracker's hooks are global, so every compiled model warned under recording and
#     not bare. While a block records, that function answers as it would without gradtrace's
#     own hooks: the user's global hooks still make torch warn.
class QuietGlobalHooks:
    """Hides the module tracker's global hooks from ``_has_any_global_hook`` until ``remove``
    (a handle like the hooks' own, so the block removes it with them)."""

    def __init__(self, ours: list[Any]) -> None:
        from torch.nn.modules import module as module_py

        self._module = module_py
        self._ids = {h.id for h in ours if hasattr(h, "id")}
        self._previous = module_py._has_any_global_hook
        module_py._has_any_global_hook = self._any_but_ours

    def _any_but_ours(self) -> bool:
        m = self._module
        hooks = (m._global_backward_pre_hooks, m._global_backward_hooks, m._global_forward_pre_hooks,
                 m._global_forward_hooks, m._global_forward_hooks_always_called,
                 m._global_forward_hooks_with_kwargs)
        return any(key not in self._ids for table in hooks for key in table)

    def remove(self) -> None:
        if self._module._has_any_global_hook == self._any_but_ours:
            self._module._has_any_global_hook = self._previous


# NOTE [a backend that cannot run here]
#     torch.compile's default backend, inductor, writes C++ (or Triton) source and builds it
#     with a compiler in processes of its own, which the sandbox forbids: the snippet failed
#     with a bare "InductorError: PermissionError: [Errno 1] Operation not permitted". The run
#     then says in words what happened and what to do instead: ``aot_eager`` traces the same
#     graph with AOTAutograd and runs it eagerly, with no compiler, and autograd records it as
#     the same one ``CompiledFunctionBackward`` per compiled region (lesson 15). The words go
#     into the error's ``detail`` and the document's ``message`` (the page shows it beside the
#     status); torch's own message stays as it was.
BACKEND_UNAVAILABLE = (
    "The compile backend could not run here: torch.compile's default backend, inductor, builds "
    "its kernels with a C++ compiler in separate processes, which gradtrace's sandbox does not "
    "allow. Compile with backend=\"aot_eager\" instead, e.g. torch.compile(model, "
    "backend=\"aot_eager\"): it needs no compiler, and autograd records the same one "
    "CompiledFunctionBackward node per compiled region")
"""(No final period: the page's error sentence adds its own.)"""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    stack = [exc]
    while stack and len(seen) < 20:
        e = stack.pop()
        if any(e is s for s in seen):
            continue
        seen.append(e)
        stack += [c for c in (e.__cause__, e.__context__, getattr(e, "inner_exception", None))
                  if isinstance(c, BaseException)]
    return seen


def backend_unavailable(exc: BaseException) -> str | None:
    """NOTE [a backend that cannot run here]: the words for a compile backend's failure to
    start a process or reach a file (a PermissionError inside dynamo's backend call), else
    None."""
    chain = _chain(exc)
    from_backend = any(type(e).__name__ in ("InductorError", "BackendCompilerFailed")
                       or type(e).__module__.startswith("torch._inductor") for e in chain)
    if not from_backend:
        return None
    denied = any(isinstance(e, PermissionError) for e in chain) or any(
        marker in str(e) for e in chain for marker in ("PermissionError", "Operation not permitted"))
    return BACKEND_UNAVAILABLE if denied else None
