"""Numerical gradient checks: per element, with the reasons, and the node to blame.

A package at capture's layer (NOTE [the layer order] in ``tests/test_layering.py``): it imports
torch, and nothing of capture imports it. The sandbox's zygote imports every module of it
before it forks (a job cannot read the source tree after lock-down), and the ``gradcheck`` job
kind (``sandbox/kinds/gradcheck.py``) calls it in the child. The web process never imports it.
What needs no torch (tolerances, the verdict over the elements, the wording of the reasons)
is ``analysis/gradcheck/``; the answer is the torch-free
:class:`gradtrace.schema.gradcheck.GradcheckResult`.

* :func:`gradcheck` checks a Python callable in this process;
* :func:`check_snippet` re-runs a snippet (the service's ``gradcheck`` job).

NOTE [a package you can call]
    ``gradtrace.gradcheck(fn, inputs)`` is the public function, and ``gradtrace.gradcheck`` is
    this package: importing a submodule sets the package as the parent's attribute, which
    would hide the function. So the package's module is callable: calling it calls
    :func:`gradcheck` (``from gradtrace.gradcheck import gradcheck`` is the same function).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from gradtrace.gradcheck.engine import Progress, check
from gradtrace.gradcheck.programs import CallableProgram, SnippetProgram
from gradtrace.gradcheck.targets import TargetError
from gradtrace.schema.gradcheck import DEFAULT_MAX_ELEMENTS, GradcheckFailed, GradcheckResult, Mode, TargetSpec


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any] | Any, *, seed: int | None = 0,
              max_elements: int = DEFAULT_MAX_ELEMENTS, upcast: bool = True, eps: float | None = None,
              atol: float | None = None, rtol: float | None = None, mode: Mode = "backward") -> GradcheckResult:
    """Check ``fn(*inputs)``'s gradient with respect to the inputs that require grad.

    Floating inputs are upcast to float64 unless ``upcast=False`` (or ``fn`` casts back, which
    the result says). At most ``max_elements`` elements (default 64, at most 512) are checked,
    chosen by ``seed``. An output of up to 64 elements is checked element by element (the
    whole Jacobian), a larger one along a seeded random direction. Before every evaluation
    torch's generator is seeded with ``seed`` (a function that draws random numbers then sees
    the same draws each time, and the result says so); ``seed=None`` leaves it unseeded (such
    a function is then inconclusive). The caller's random state is put back afterwards. The
    result has a notebook repr (the grid) and ``.raise_if_failed()``.

    ``mode="forward"`` checks forward-mode AD instead: the tangent a custom Function's ``jvp``
    gives for each one-hot input tangent against the central difference along it, with the
    same tolerances and verdicts (NOTE [checking a jvp] in ``gradcheck/forward.py``).
    """
    import torch

    args = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
    if mode == "forward":
        from gradtrace.gradcheck.forward import check_forward

        targets = [(k, f"inputs[{k}]") for k, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad]
        return check_forward(CallableProgram(fn, args, seed=seed).fn, args, targets, seed=seed or 0,
                             max_elements=max_elements, upcast=upcast, eps=eps, atol=atol, rtol=rtol)
    if mode != "backward":
        raise ValueError(f"mode is 'backward' or 'forward', not {mode!r}")
    return check(CallableProgram(fn, args, seed=seed), None, seed=seed or 0, max_elements=max_elements,
                 upcast=upcast, eps=eps, atol=atol, rtol=rtol)


def check_snippet(code: str, target: TargetSpec | None = None, *, seed: int | None = 0,
                  max_elements: int = DEFAULT_MAX_ELEMENTS,
                  progress: Progress | None = None, filename: str = "<snippet>",
                  sample_seed: int | None = None, time_budget_s: float | None = None,
                  mode: Mode = "backward") -> GradcheckResult:
    """Check a snippet's backward pass ``target.pass_index`` (default: the first) with respect
    to ``target`` by re-running it under ``seed``
    (every leaf when ``target`` is None); ``sample_seed`` (default: ``seed``) chooses the
    sampled elements (NOTE [how a re-run finds the same tensor] in
    :mod:`gradtrace.gradcheck.probe`). ``mode="forward"``: the ``jvp`` of the
    Function ``target`` names, at its call ``target.occurrence`` from the snippet's start."""
    if mode == "forward":
        from gradtrace.gradcheck.forward_snippet import check_snippet_forward

        if target is None:
            raise TargetError("forward mode checks a custom Function's jvp: name the Function")
        return check_snippet_forward(code, target, seed=seed, max_elements=max_elements, filename=filename,
                                     sample_seed=(seed or 0) if sample_seed is None else sample_seed)
    return check(SnippetProgram(code, seed=seed, filename=filename), target,
                 seed=(seed or 0) if sample_seed is None else sample_seed, max_elements=max_elements,
                 progress=progress, time_budget_s=time_budget_s)


class _CallableModule(types.ModuleType):
    """NOTE [a package you can call]."""

    def __call__(self, fn: Callable[..., Any], inputs: Sequence[Any] | Any, **options: Any) -> GradcheckResult:
        return gradcheck(fn, inputs, **options)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["GradcheckFailed", "GradcheckResult", "TargetError", "TargetSpec", "check_snippet", "gradcheck"]
