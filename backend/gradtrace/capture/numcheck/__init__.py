"""Numerical gradient checks: per element, with the reasons, and the node to blame.

It is called ``numcheck``, not ``gradcheck``, because ``gradtrace.gradcheck`` is the function
(a subpackage of that name would replace it as soon as it is imported).

This package imports torch, so it lives inside ``capture``: the sandbox's zygote imports every
module of capture before it forks (a job cannot read the source tree after lock-down), and the
``gradcheck`` job kind (``sandbox/kinds/gradcheck.py``) imports it in the child. The web process
never imports it. It uses nothing of the recorder. Its answer is the torch-free
:class:`gradtrace.schema.gradcheck.GradcheckResult`.

* :func:`gradcheck` checks a Python callable in this process;
* :func:`check_snippet` re-runs a snippet (the service's ``gradcheck`` job).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradtrace.capture.numcheck.engine import Progress, TargetError, check
from gradtrace.capture.numcheck.programs import CallableProgram, SnippetProgram
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
    same tolerances and verdicts (NOTE [checking a jvp] in ``numcheck/forward.py``).
    """
    import torch

    args = [inputs] if isinstance(inputs, torch.Tensor) else list(inputs)
    if mode == "forward":
        from gradtrace.capture.numcheck.forward import check_forward

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
    :mod:`gradtrace.capture.numcheck.probe`). ``mode="forward"``: the ``jvp`` of the
    Function ``target`` names, at its call ``target.occurrence`` from the snippet's start."""
    if mode == "forward":
        from gradtrace.capture.numcheck.forward_snippet import check_snippet_forward

        if target is None:
            raise TargetError("forward mode checks a custom Function's jvp: name the Function")
        return check_snippet_forward(code, target, seed=seed, max_elements=max_elements, filename=filename,
                                     sample_seed=(seed or 0) if sample_seed is None else sample_seed)
    return check(SnippetProgram(code, seed=seed, filename=filename), target,
                 seed=(seed or 0) if sample_seed is None else sample_seed, max_elements=max_elements,
                 progress=progress, time_budget_s=time_budget_s)


__all__ = ["GradcheckFailed", "GradcheckResult", "TargetError", "TargetSpec", "check_snippet", "gradcheck"]
