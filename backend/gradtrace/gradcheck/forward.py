"""Forward mode: a custom Function's ``jvp`` checked against central differences of its forward.

NOTE [checking a jvp]
    The backward check compares one row of the Jacobian (a vector-Jacobian product) with finite
    differences; forward mode compares one column. For each checked input element ``k`` the
    function runs once under ``torch.autograd.forward_ad.dual_level()`` with that element's
    one-hot tangent (every other input a dual with a zero tangent, as
    ``torch.autograd.gradcheck(check_forward_ad=True)`` does), and the output tangents it
    carries (``unpack_dual``) are the analytic column; ``(f(x + h e_k) - f(x - h e_k)) / 2h``
    is the numeric one. Each element is judged as the backward check judges it
    (``analysis/gradcheck/verdict.py``: the same tolerances, one-sided
    differences, kinks, the same verdicts). On a fail, each custom Function the code defines
    and called is checked alone on the inputs it was called with, along a seeded random
    tangent: the first whose ``jvp`` disagrees with its own forward is the suspect. A Function
    that defines no ``jvp`` cannot run in forward mode at all: the check says so
    (``no_jvp``), never raises.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.autograd.forward_ad as fwAD

from gradtrace.analysis.gradcheck.verdict import failed, forward_kink_reason, tolerances
from gradtrace.analysis.gradcheck.verdict import verdict as judge
from gradtrace.gradcheck import kinks, rng
from gradtrace.gradcheck.apply import FunctionApplyPatch
from gradtrace.gradcheck.cuts import not_library
from gradtrace.gradcheck.elements import element
from gradtrace.gradcheck.engine import MAX_ROWS
from gradtrace.gradcheck.jvp_suspect import Call, has_jvp, make_dual, suspect, unpack_dual
from gradtrace.gradcheck.targets import Target, TargetError
from gradtrace.schema.gradcheck import (
    MAX_ELEMENTS,
    CheckedTensor,
    ElementCheck,
    GradcheckResult,
    Reason,
)

_UPCASTABLE = {torch.float32, torch.float16, torch.bfloat16}


@dataclass
class Calls:
    """Every custom Function ``apply`` of one evaluation, with its arguments' primal values."""

    calls: list[Call] = field(default_factory=list)
    keep: bool = False

    def apply_function(self, original: Callable[..., Any], cls: type, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
        if self.keep:
            self.calls.append(Call(cls, tuple(_primal(a) for a in args), dict(kwargs)))
        return original(*args, **kwargs)


def _primal(a: Any) -> Any:
    if not isinstance(a, torch.Tensor):
        return a
    p = unpack_dual(a).primal if _has_tangent(a) else a
    return p.detach().clone()


def _has_tangent(a: torch.Tensor) -> bool:
    try:
        return unpack_dual(a).tangent is not None
    except RuntimeError:
        return False


def _outputs(out: Any) -> list[torch.Tensor]:
    outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)] \
        if isinstance(out, (tuple, list)) else []
    if not outs:
        raise TypeError("the function returned no tensor")
    return outs


def _first(e: BaseException) -> str:
    lines = str(e).splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def _rows(outputs: list[torch.Tensor], direction: torch.Tensor | None) -> torch.Tensor:
    flat = torch.cat([o.detach().reshape(-1).to(torch.float64) for o in outputs])
    return flat if direction is None else (flat * direction).sum().reshape(1)


def _fresh(a: Any) -> Any:
    """A copy for one evaluation: a function that writes its input in place (``mark_dirty``)
    leaves the next evaluation's input as it was."""
    return a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a


class _Fn:
    """``fn(*args)`` evaluated plainly or with tangents, every Function call watched."""

    def __init__(self, fn: Callable[..., Any], args: list[Any]) -> None:
        self.fn, self.args, self.watch = fn, args, Calls()
        self.runs = 0

    def plain(self, replace: dict[int, torch.Tensor] | None = None, *, keep: bool = False) -> list[torch.Tensor]:
        """The outputs (``keep``: and every Function call, with its arguments, kept in ``watch``)."""
        self.runs += 1
        args = [_fresh(replace.get(i, a) if replace else a) for i, a in enumerate(self.args)]
        self.watch.keep = keep
        try:
            with FunctionApplyPatch(self.watch), torch.no_grad():
                return [o.detach() for o in _outputs(self.fn(*args))]
        finally:
            self.watch.keep = False

    def dual(self, tangents: dict[int, torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(outputs, their tangents) with ``tangents`` on the inputs (zeros where one has none)."""
        self.runs += 1
        with fwAD.dual_level(), FunctionApplyPatch(self.watch):
            args = [make_dual(_fresh(a), tangents[i]) if i in tangents else _fresh(a) for i, a in enumerate(self.args)]
            outs = _outputs(self.fn(*args))
            unpacked = [unpack_dual(o) for o in outs]
            return ([u.primal.detach().clone() for u in unpacked],
                    [torch.zeros_like(u.primal) if u.tangent is None else u.tangent.detach().clone()
                     for u in unpacked])


def check_forward(fn: Callable[..., Any], inputs: Sequence[Any], targets: list[tuple[int, str]], *,
                  seed: int = 0, max_elements: int, upcast: bool = True, eps: float | None = None,
                  atol: float | None = None, rtol: float | None = None,
                  user_file: Callable[[str], bool] = not_library,
                  occurrence: dict[str, int] | None = None) -> GradcheckResult:
    """Check ``fn(*inputs)``'s forward-mode derivative with respect to ``inputs[i]`` for each
    ``(i, name)`` of ``targets`` (NOTE [checking a jvp]); the caller's random state is kept."""
    if not 1 <= max_elements <= MAX_ELEMENTS:
        raise TargetError(f"max_elements must be between 1 and {MAX_ELEMENTS}, not {max_elements}")
    with rng.kept():
        return _check(fn, list(inputs), targets, seed=seed, max_elements=max_elements, upcast=upcast,
                      eps=eps, atol=atol, rtol=rtol, user_file=user_file, occurrence=occurrence or {})


def _inputs(inputs: list[Any], targets: list[tuple[int, str]], up: bool) -> list[Any]:
    """Fresh copies; the targets (and with ``up`` every floating input) in float64."""
    wanted = {i for i, _ in targets}
    out: list[Any] = []
    for i, a in enumerate(inputs):
        if isinstance(a, torch.Tensor):
            c = a.detach().clone()
            if up and c.dtype in _UPCASTABLE:
                c = c.to(torch.float64)
            out.append(c.requires_grad_(a.requires_grad and i in wanted and c.is_floating_point()))
        else:
            out.append(a)
    return out


def _check(fn: Callable[..., Any], inputs: list[Any], targets: list[tuple[int, str]], *, seed: int,
           max_elements: int, upcast: bool, eps: float | None, atol: float | None, rtol: float | None,
           user_file: Callable[[str], bool], occurrence: dict[str, int]) -> GradcheckResult:
    started = time.perf_counter()
    reasons: list[Reason] = []
    runner = _Fn(fn, _inputs(inputs, targets, upcast))

    def result(verdict: str, dtype: str = "float64", **kw: Any) -> GradcheckResult:
        e0, a0, r0 = tolerances(dtype)
        kw.setdefault("reasons", reasons)
        return GradcheckResult(verdict=verdict, mode="forward", dtype=dtype,  # type: ignore[arg-type]
                               eps=eps or e0, atol=atol or a0, rtol=rtol or r0, seed=seed,
                               max_elements=max_elements, executions=runner.runs,
                               seconds=time.perf_counter() - started, **kw)

    def stop(code: str, message: str, dtype: str = "float64") -> GradcheckResult:
        reasons.append(Reason(code=code, message=message))  # type: ignore[arg-type]
        return result("inconclusive", dtype)

    if not targets:
        return stop("no_gradient", "no input requires grad: nothing to give a tangent to")
    try:
        outputs = runner.plain(keep=True)
        if upcast and any(o.dtype != torch.float64 for o in outputs if o.is_floating_point()):
            runner = _Fn(fn, _inputs(inputs, targets, False))
            outputs = runner.plain(keep=True)
            reasons.append(Reason(code="no_upcast", message="not upcast to float64: the function computes in "
                                  f"{str(outputs[0].dtype).removeprefix('torch.')} even when its inputs are "
                                  "float64; checked with looser tolerances"))
    except Exception as e:
        return stop("program_error", f"the function raised: {_first(e)}")
    dtype = str(outputs[0].dtype).removeprefix("torch.")
    e0, a0, r0 = tolerances(dtype)
    eps, atol, rtol = eps or e0, atol or a0, rtol or r0
    called = runner.watch.calls
    tensors = [runner.args[i] for i, _ in targets]
    zero = {i: torch.zeros_like(runner.args[i]) for i, _ in targets}
    try:
        runner.dual(zero)
    except Exception as e:
        missing = sorted({c.cls.__name__ for c in called if not has_jvp(c.cls)})
        if missing:
            return stop("no_jvp", f"{', '.join(missing)} defines no jvp: forward-mode AD cannot run through it "
                        "(define a staticmethod jvp(ctx, *tangents), with setup_context or ctx.save_for_forward)",
                        dtype)
        return stop("jvp_error", f"forward-mode AD raised: {_first(e)}", dtype)

    n_out = sum(o.numel() for o in outputs)
    direction = None
    if n_out > MAX_ROWS:
        direction = torch.randn(n_out, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        reasons.append(Reason(code="projected", message=f"the output has {n_out:,} elements: checked along "
                              "one random direction (seeded) rather than row by row"))
    centre = _rows(outputs, direction)
    if not torch.allclose(_rows(runner.plain(), direction), centre, rtol=1e-10, atol=0.0, equal_nan=True):
        return stop("nondeterministic_forward", "the function gave a different result when run again at the "
                    "same input, so finite differences of it mean nothing", dtype)

    sizes = [t.numel() for t in tensors]
    total = sum(sizes)
    flat = [(ti, k) for ti, n in enumerate(sizes) for k in range(n)]
    if len(flat) > max_elements:
        picked = sorted(random.Random(seed).sample(range(len(flat)), max_elements))
        flat = [flat[k] for k in picked]
        reasons.append(Reason(code="sampled", message=f"{max_elements} of {total:,} elements checked, "
                              f"chosen by seed {seed}: sampled, not exhaustive"))
    shown = [Target(name, "arg", i, runner.args[i]) for i, name in targets]
    elements: list[ElementCheck] = []

    def moved(ti: int, k: int, h: float) -> list[torch.Tensor]:
        i = targets[ti][0]
        x = runner.args[i].detach().clone()
        x.view(-1)[k] += h
        return runner.plain({i: x})

    for ti, k in flat:
        i = targets[ti][0]
        one = dict(zero)
        one[i] = torch.zeros_like(runner.args[i])
        one[i].view(-1)[k] = 1
        try:
            _, tangents = runner.dual(one)
        except Exception as e:
            return stop("jvp_error", f"forward-mode AD raised: {_first(e)}", dtype)
        analytic = _rows(tangents, direction).tolist()
        x = runner.args[i].detach().reshape(-1)[k]
        hp, hm = float((x + eps).to(x.dtype) - x), float(x - (x - eps).to(x.dtype))
        fp, fm = _rows(moved(ti, k, hp), direction), _rows(moved(ti, k, -hm), direction)
        checked = element(ti, shown[ti], k, analytic, fp, fm, centre, hp, hm, atol, rtol)
        if checked.kink and (checked.ok or checked.nonfinite):
            wide = 10 * eps
            checked.kink = kinks.confirmed(checked, _rows(moved(ti, k, wide), direction),
                                           _rows(moved(ti, k, -wide), direction), centre, wide)
        elements.append(checked)
    verdict, worst = judge(elements)
    n_kinks = sum(1 for e in elements if e.kink)
    if n_kinks:
        reasons.append(forward_kink_reason(n_kinks))
    out = result(verdict, dtype, tensors=[CheckedTensor(name=n, shape=list(runner.args[i].shape), dtype=dtype,
                                                        numel=runner.args[i].numel(),
                                                        checked=sum(1 for ti, _ in flat if ti == j))
                                          for j, (i, n) in enumerate(targets)],
                 elements=elements, worst=worst, checked=len(elements), total=total,
                 failed=sum(1 for e in elements if failed(e)), kinks=n_kinks)
    if verdict == "fail":
        out.suspect = suspect(called, seed, eps, atol, rtol, user_file, occurrence)
    out.executions, out.seconds = runner.runs, time.perf_counter() - started
    return out

