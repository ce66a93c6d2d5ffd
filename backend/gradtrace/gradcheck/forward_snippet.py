"""Forward mode on a snippet: find the named Function's call, then check its ``jvp`` there.

The snippet re-runs under its seed (as ``SnippetProgram`` runs it) until the ``occurrence``-th
call of the Function, counted from the snippet's start; that call's arguments (primal values,
detached) are kept and the run stops. The check is then :func:`check_forward` of the
Function's ``apply`` on them (NOTE [checking a jvp] in ``forward.py``): the inputs that carried
a tangent or required grad get tangents (every floating input when none did). A snippet need
not call backward for this.
"""

from __future__ import annotations

import builtins
import contextlib
import random
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gradtrace.gradcheck.apply import FunctionApplyPatch
from gradtrace.gradcheck.forward import _has_tangent, _primal, check_forward
from gradtrace.gradcheck.probe import Stop
from gradtrace.gradcheck.programs import _cpu_seeding, _Sink
from gradtrace.gradcheck.targets import TargetError
from gradtrace.schema.gradcheck import GradcheckResult, Reason, TargetSpec


class _Find:
    """Counts the calls of one Function class and stops at the wanted one."""

    def __init__(self, name: str, occurrence: int) -> None:
        self.name, self.occurrence = name, occurrence
        self.seen = 0
        self.found: tuple[type, tuple[Any, ...], dict[str, Any], list[bool]] | None = None
        self.aside = 0
        """Above 0 while torch's own checks run: their calls are not the snippet's (NOTE [torch's
        checks inside a re-run] in apply.py)."""

    def apply_function(self, original: Callable[..., Any], cls: type, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
        if cls.__name__ == self.name and not self.aside:
            if self.seen == self.occurrence:
                marked = [isinstance(a, torch.Tensor) and (a.requires_grad or _has_tangent(a)) for a in args]
                self.found = (cls, tuple(_primal(a) for a in args), dict(kwargs), marked)
                raise Stop()
            self.seen += 1
        return original(*args, **kwargs)


def check_snippet_forward(code: str, target: TargetSpec, *, seed: int | None, sample_seed: int,
                          max_elements: int, filename: str = "<snippet>") -> GradcheckResult:
    """The ``jvp`` of call ``target.occurrence`` of Function ``target.name`` in the snippet."""
    if target.kind != "function" or not target.name:
        raise TargetError("forward mode checks a custom Function's jvp: give a target of kind 'function' "
                          "with the Function's name")
    name = target.name.removesuffix("Backward")
    compiled = compile(code, filename, "exec", dont_inherit=True)
    find = _Find(name, target.occurrence)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F}
    if seed is not None:
        random.seed(seed)
        torch.default_generator.manual_seed(seed)
    sink = _Sink()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), _cpu_seeding():
        try:
            with FunctionApplyPatch(find):
                exec(compiled, namespace)
        except Stop:
            pass
        except Exception as e:
            if find.found is None:
                first = str(e).splitlines()[0] if str(e) else ""
                return GradcheckResult(verdict="inconclusive", mode="forward", seed=sample_seed,
                                       max_elements=max_elements, reasons=[Reason(
                                           code="program_error",
                                           message=f"the program raised before call {target.occurrence} of "
                                                   f"{name}: {type(e).__name__}: {first}")])
    if find.found is None:
        raise TargetError(f"the custom Function {name!r} is called {find.seen} time(s) in the snippet; "
                          f"call {target.occurrence} does not exist")
    cls, args, kwargs, marked = find.found
    floating = [isinstance(a, torch.Tensor) and a.is_floating_point() for a in args]
    chosen = [i for i, m in enumerate(marked) if m and floating[i]] or [i for i, f in enumerate(floating) if f]
    inputs = [a.requires_grad_(i in chosen) if isinstance(a, torch.Tensor) and floating[i] else a
              for i, a in enumerate(args)]

    def apply(*a: Any) -> Any:
        return cls.apply(*a, **kwargs)  # type: ignore[attr-defined]

    return check_forward(apply, inputs, [(i, f"{name} input {i}") for i in chosen], seed=sample_seed,
                         max_elements=max_elements, user_file=lambda f: f == filename,
                         occurrence={name + "Backward": target.occurrence})
