"""Library calls that re-run the snippet's own code: torch's gradient checks, folded into one
entry with their verdict, and a reentrant checkpoint's recomputation, shown.

NOTE [torch's own checks are folded]
    ``torch.autograd.gradcheck`` and ``gradgradcheck`` call the snippet's function dozens to
    thousands of times (perturbed inputs for the numerical Jacobian, one ``autograd.grad`` per
    output element for the analytical one). Recorded like the snippet's own calls, that is
    94-99 % of a custom-Function tutorial's nodes and 2,634 of a fused conv-bn tutorial's
    2,638 backward passes: the iteration picker counts torch's checks as training iterations.
    So a check is library code, as ``optimizer.step()`` is (NOTE [optimizer steps] in
    library.py), but folded whole: while it runs the torch-function mode is off the stack, the
    line tracer is suspended and module calls are not taken for evaluation (``rec.folding``),
    so nothing of it enters the graph or the passes. What the document keeps is one entry per
    calling line (``RunDocument.folded``): the check, its line, how many times it ran there,
    its verdict (``passed``: it returned True; ``failed``: it returned False or raised
    ``GradcheckError``, with torch's message; ``raised``: any other exception) and how many
    autograd nodes it made. Nothing it made can escape (it returns a bool).

    The checks are found by wrapping the module attributes torch exposes them under
    (``torch.autograd.gradcheck``, ``torch.autograd.gradgradcheck`` and the functions of the
    ``torch.autograd.gradcheck`` module, which ``gradgradcheck`` itself calls) for the block's
    duration; torch gives no hook into them. A snippet imports them inside the block and gets
    the wrapper; a name bound before an in-process block (``from torch.autograd import
    gradcheck`` at the top of a notebook) still runs the check recorded. The wrapper calls
    torch's function with the same arguments and returns or raises exactly what it does.

    ``torch.autograd.functional.jacobian`` and ``hessian`` are *not* folded: their result is
    the snippet's value (the tutorial's Jacobian), and with ``create_graph=True`` the graph
    behind it is part of the snippet's graph, walked by its later backward passes.

NOTE [reentrant checkpoint recomputation]
    ``checkpoint(fn, x, use_reentrant=True)`` runs ``fn`` under ``no_grad`` in the forward and
    again, with gradients on, inside ``CheckpointFunction.backward``, which then calls
    ``torch.autograd.backward`` on the recomputed graph: that inner backward is where the
    parameters inside ``fn`` get their gradients. It runs inside the engine, where the
    torch-function mode is not on the stack, so neither the recomputed nodes nor the inner
    pass were seen, and those parameters were missing from the document. For the block's
    duration ``CheckpointFunction.backward`` is wrapped: on the recording thread, with the
    mode pushed back for its duration, so the recomputed nodes are recorded as made in the
    outer pass (``created_in_pass``) and the inner backward as a pass of its own
    (``BackwardPass.within``: the pass it ran inside; the page counts iterations by outermost
    passes only). The non-reentrant variant needs nothing: its nodes are made in the forward,
    and its recomputation (inside saved-tensor unpack hooks) makes no node anyone walks.
    Checkpoint's gradients-off forward is no evaluation: NOTE [training mode under no_grad]
    in modules.py skips module calls made inside it.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any

import torch
import torch.autograd.gradcheck
import torch.utils.checkpoint as _checkpoint_module

from gradtrace.capture.mode import CaptureMode
from gradtrace.capture.recorder import Recorder

_seq_nr = torch._C._autograd._get_sequence_nr
_gradcheck_module = sys.modules["torch.autograd.gradcheck"]
"""The module (its name on ``torch.autograd`` is the function)."""

MAX_FOLDED = 200
"""Entries kept (one per calling line and check); more lines than that are counted in the last."""

_CHECKS = ("gradcheck", "gradgradcheck")


def _verdict(result: Any, exc: BaseException | None) -> tuple[str, str | None]:
    if exc is None:
        return ("passed", None) if result is True else ("failed", None)
    text = str(exc).strip()
    message = text.splitlines()[0][:300] if text else None
    if type(exc).__name__ == "GradcheckError":
        return "failed", message
    return "raised", f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Folds:
    """Wraps the checks and checkpoint's backward for one block (NOTE [torch's own checks are
    folded], NOTE [reentrant checkpoint recomputation])."""

    def __init__(self, rec: Recorder, mode: CaptureMode | None) -> None:
        self.rec = rec
        self.mode = mode
        self._thread = threading.get_ident()
        self._saved: list[tuple[Any, str, Any]] = []

    def install(self) -> list[Any]:
        self._thread = threading.get_ident()
        originals = {name: getattr(_gradcheck_module, name) for name in _CHECKS}
        for name, fn in originals.items():
            wrapped = self._folding(fn, f"torch.autograd.{name}")
            for owner in (_gradcheck_module, torch.autograd):
                if getattr(owner, name, None) is fn:
                    self._patch(owner, name, wrapped)
        cls = _checkpoint_module.CheckpointFunction
        backward = cls.__dict__.get("backward")
        if isinstance(backward, staticmethod):
            self._patch(cls, "backward", staticmethod(self._recomputing(backward.__func__)))
        return [self]

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__[name] if isinstance(owner, type)
                            else getattr(owner, name)))
        setattr(owner, name, value)

    def remove(self) -> None:
        saved, self._saved = self._saved, []
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)

    def _mine(self) -> bool:
        return (threading.get_ident() == self._thread and self.rec.limit is None
                and self.mode is not None)

    # ------------------------------------------------------------------ checks
    def _folding(self, fn: Any, api: str) -> Any:
        @functools.wraps(fn)
        def check(*args: Any, **kwargs: Any) -> Any:
            rec = self.rec
            if rec.folding or not self._mine():
                return fn(*args, **kwargs)
            line = rec.current_line()
            try:
                rec.flush()  # the line's nodes before the check (NOTE [discovery in batches])
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                rec.internal_error(e)
            assert self.mode is not None
            aside = self.mode.step_aside()
            suspended = rec.tracer.set_suspended(True)
            rec.folding += 1
            mark = _seq_nr()
            result: Any = None
            exc: BaseException | None = None
            try:
                result = fn(*args, **kwargs)
                return result
            except BaseException as e:
                exc = e
                raise
            finally:
                made = _seq_nr() - mark
                rec.folding -= 1
                rec.tracer.set_suspended(suspended)
                if aside:
                    self.mode.step_back()
                if exc is None or isinstance(exc, Exception):
                    self._note(api, line, made, *_verdict(result, exc))

        return check

    def _note(self, api: str, line: int | None, made: int, verdict: str,
              message: str | None) -> None:
        folded = self.rec.folded
        for f in folded:
            if f["api"] == api and f["line"] == line and f["verdict"] == verdict:
                f["calls"] += 1
                f["nodes"] += made
                return
        if len(folded) < MAX_FOLDED:
            folded.append({"api": api, "line": line, "calls": 1, "verdict": verdict,
                           "message": message, "nodes": made})

    # ------------------------------------------------------------------ checkpoint
    def _recomputing(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def backward(ctx: Any, *args: Any) -> Any:
            rec = self.rec
            mode = self.mode
            if rec.folding or not self._mine() or mode is None or _on_stack(mode):
                return fn(ctx, *args)
            mode.step_back()
            try:
                return fn(ctx, *args)
            finally:
                _pop_if_top(mode)

        return backward


def _on_stack(mode: CaptureMode) -> bool:
    return any(torch._C._get_function_stack_at(i) is mode
               for i in range(torch._C._len_torch_function_stack()))


def _pop_if_top(mode: CaptureMode) -> None:
    n = torch._C._len_torch_function_stack()
    if n and torch._C._get_function_stack_at(n - 1) is mode:
        torch._C._pop_torch_function_stack()


def inside_checkpoint_forward() -> bool:
    """Whether a reentrant or non-reentrant checkpoint's forward is running on this thread
    (its gradients-off pass is no evaluation: NOTE [training mode under no_grad] in
    modules.py). Asked only for dropout and batch-norm calls under ``no_grad``."""
    frame = sys._getframe(1)
    target = _checkpoint_module.__file__
    while frame is not None:
        if frame.f_code.co_filename == target:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
