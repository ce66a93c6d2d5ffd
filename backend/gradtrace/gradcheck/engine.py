"""The check: central differences per element against the analytic gradient of the same pass.

One baseline execution keeps the graph and gives the analytic gradient (taken twice: a backward
that answers differently the second time is nondeterministic); one centre execution shows that
the program answers the same again; then two executions per checked element, ``x + h`` and
``x - h``. With the centre value they give both one-sided differences too, so a kink (relu or
abs at 0, a tie in max) is told apart from a wrong backward. That is ``2 * elements + 2``
executions; only a failing check adds the suspect search (:mod:`gradtrace.gradcheck.suspect`).
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from gradtrace.analysis.gradcheck.verdict import failed, settle, tolerances
from gradtrace.analysis.gradcheck.verdict import verdict as judge
from gradtrace.gradcheck import kinks, linearity, nonfinite, rng, suspect
from gradtrace.gradcheck.elements import element, nudge
from gradtrace.gradcheck.probe import Nudge, Probe
from gradtrace.gradcheck.programs import NoBackward, Program, ProgramFailed
from gradtrace.gradcheck.targets import TargetError, resolve
from gradtrace.schema.gradcheck import (
    DEFAULT_MAX_ELEMENTS,
    MAX_ELEMENTS,
    CheckedTensor,
    ElementCheck,
    GradcheckResult,
    Reason,
    TargetSpec,
)

MAX_ROWS = 64
"""Outputs up to this many elements are checked one by one (the full Jacobian); a larger
output is checked along one seeded random direction."""

Progress = Callable[[int, int], None]


@dataclass
class Baseline:
    probe: Probe
    outputs: list[torch.Tensor]
    rows: torch.Tensor
    direction: torch.Tensor | None


def _rows(outputs: list[torch.Tensor], direction: torch.Tensor | None) -> torch.Tensor:
    flat = torch.cat([o.reshape(-1).to(torch.float64) for o in outputs])
    return flat if direction is None else (flat * direction).sum().reshape(1)


def check(program: Program, spec: TargetSpec | None = None, *, seed: int = 0,
          max_elements: int = DEFAULT_MAX_ELEMENTS, upcast: bool = True,
          eps: float | None = None, atol: float | None = None, rtol: float | None = None,
          progress: Progress | None = None, time_budget_s: float | None = None) -> GradcheckResult:
    """The check, with the caller's random state put back afterwards (``gradcheck/rng.py``)."""
    with rng.kept():
        return _check(program, spec, seed=seed, max_elements=max_elements, upcast=upcast, eps=eps, atol=atol,
                      rtol=rtol, progress=progress, time_budget_s=time_budget_s)


def _check(program: Program, spec: TargetSpec | None, *, seed: int, max_elements: int, upcast: bool,
           eps: float | None, atol: float | None, rtol: float | None,
           progress: Progress | None, time_budget_s: float | None) -> GradcheckResult:
    """Check ``program``'s gradient with respect to ``spec`` (NOTE [what a verdict means] in
    ``schema/gradcheck.py``). Raises :class:`TargetError` for a target that is not there.

    ``time_budget_s``: when the baseline and centre executions show that two executions per
    element would not fit in it, fewer elements are checked (seeded, and said in a reason), so
    a check in the sandbox ends with a verdict rather than at the time limit."""
    if not 1 <= max_elements <= MAX_ELEMENTS:
        raise TargetError(f"max_elements must be between 1 and {MAX_ELEMENTS}, not {max_elements}")
    started = time.perf_counter()
    reasons: list[Reason] = []
    runs = 0

    pass_index = (spec.pass_index or 0) if spec is not None else 0
    # NOTE [one probe for every execution] in probe.py
    shared = Probe(upcast=upcast, pass_index=pass_index, user_file=program.user_file)

    def execute(nudge: Nudge | None, *, up: bool, keep: bool = False) -> tuple[Probe, list[torch.Tensor]]:
        nonlocal runs
        runs += 1
        outputs = program.execute(shared.reset(upcast=up, nudge=nudge, keep_sites=keep))
        return copy.copy(shared), outputs

    def stop(code: str, message: str, dtype: str = "float64") -> GradcheckResult:
        reasons.append(Reason(code=code, message=message))  # type: ignore[arg-type]
        e, a, r = tolerances(dtype)
        return GradcheckResult(verdict="inconclusive", dtype=dtype, eps=e, atol=a, rtol=r, seed=seed,
                               max_elements=max_elements, reasons=reasons, executions=runs,
                               pass_index=pass_index, seconds=time.perf_counter() - started)

    # 1. the baseline, upcast where the program allows it
    try:
        probe, outputs = execute(None, up=upcast, keep=True)
        upcast_ok = upcast and all(o.dtype == torch.float64 for o in outputs) and not probe.upcast_failures
        why = ("the program computes its result in " + str(outputs[0].dtype).removeprefix("torch.")
               + (" even when its inputs are float64" if upcast else ""))
    except ProgramFailed as e:
        if not upcast:
            return stop("program_error", f"the program raised before its first backward: {e}")
        upcast_ok, why = False, f"in float64 the program raised {e}"
    except NoBackward as e:
        if e.passes:
            raise TargetError(str(e)) from None
        return stop("no_backward", str(e))
    if not upcast_ok:
        try:
            probe, outputs = execute(None, up=False, keep=True)
        except ProgramFailed as e:
            return stop("program_error", f"the program raised before its first backward: {e}")
        except NoBackward as e:
            if e.passes:
                raise TargetError(str(e)) from None
            return stop("no_backward", str(e))
        if upcast:
            reasons.append(Reason(code="no_upcast", message=f"not upcast to float64: {why}; checked in "
                                  f"{str(outputs[0].dtype).removeprefix('torch.')} with looser tolerances"))
    elif probe.upcasts:
        reasons.append(Reason(code="upcast", message="upcast to float64 (the program's own numbers, "
                              "converted where they first enter the computation)"))
    dtype = str(outputs[0].dtype).removeprefix("torch.") if outputs else "float64"
    e0, a0, r0 = tolerances(dtype)
    eps, atol, rtol = eps or e0, atol or a0, rtol or r0
    targets = resolve(program, probe, spec)
    pinned = getattr(program, "seed", None)
    if probe.draws and pinned is not None:
        reasons.append(Reason(code="seeded", message=f"the program draws random numbers: the check seeds "
                              f"torch's generator with {pinned} before every execution, so each sees the same "
                              "draws (your own random state is put back afterwards)"))

    def result(verdict: str, **kw: Any) -> GradcheckResult:
        kw.setdefault("reasons", reasons)
        return GradcheckResult(verdict=verdict, dtype=dtype, eps=eps, atol=atol, rtol=rtol,  # type: ignore[arg-type]
                               seed=seed, max_elements=max_elements, executions=runs, pass_index=pass_index,
                               seconds=time.perf_counter() - started, **kw)

    # 2. the analytic gradient, twice
    n_out = sum(o.numel() for o in outputs)
    direction = None
    if n_out > MAX_ROWS:
        g = torch.Generator().manual_seed(seed)
        direction = torch.randn(n_out, generator=g, dtype=torch.float64)
        reasons.append(Reason(code="projected", message=f"the output has {n_out:,} elements: checked along "
                              "one random direction (seeded) rather than row by row"))
    rows = _rows(outputs, direction)
    tensors = [t.tensor for t in targets]
    try:
        analytic = [_grads(rows[r], tensors) for r in range(rows.numel())]
        again = [_grads(rows[r], tensors) for r in range(rows.numel())]
    except RuntimeError as exc:
        first = str(exc).split("\n")[0]
        return result("inconclusive", reasons=[*reasons, Reason(code="backward_error",
                                                                message=f"the backward raised: {first}")])
    if any(not _same(a, b) for ra, rb in zip(analytic, again, strict=True) for a, b in zip(ra, rb, strict=True)):
        reasons.append(Reason(code="nondeterministic_backward", message="the backward gave a different "
                              "gradient when run twice on the same graph"))

    # 3. which elements
    sizes = [t.tensor.numel() for t in targets]
    total = sum(sizes)
    overlapping = [i for i, t in enumerate(targets) if t.kind == "leaf" and t.key in probe.overlapping]
    for i in overlapping:
        reasons.append(Reason(code="overlapping_memory", message=f"{targets[i].name} is expanded: its "
                              "elements share memory, so one element cannot be moved alone"))
    flat = [(ti, k) for ti, n in enumerate(sizes) if ti not in overlapping for k in range(n)]
    if len(flat) > max_elements:
        picked = sorted(random.Random(seed).sample(range(len(flat)), max_elements))
        flat = [flat[k] for k in picked]
        reasons.append(Reason(code="sampled", message=f"{max_elements} of {total:,} elements checked, "
                              f"chosen by seed {seed}: sampled, not exhaustive"))

    # 4. the centre and the nudges
    baseline_rows = rows.detach()
    t_centre = time.perf_counter()
    _, centre_out = execute(None, up=upcast_ok)
    centre = _rows(centre_out, direction).detach()
    per_run = time.perf_counter() - t_centre
    if time_budget_s is not None and per_run > 0:
        fit = max(1, int((time_budget_s - (time.perf_counter() - started)) / (2 * per_run)))
        if fit < len(flat):
            picked = sorted(random.Random(seed + 1).sample(range(len(flat)), fit))
            flat = [flat[k] for k in picked]
            reasons[:] = [r for r in reasons if r.code != "sampled"]  # this one says it all
            reasons.append(Reason(code="sampled", message=f"{fit} of {total:,} elements checked (seed {seed}): "
                                  f"one run of the snippet takes {per_run * 1000:.0f} ms, and more would not fit "
                                  "in the sandbox's time limit"))
    if not torch.allclose(centre, baseline_rows, rtol=1e-10, atol=0.0, equal_nan=True):
        why = ("under the same seed" if pinned is not None else
               "at the same input (it draws random numbers and the check was told not to seed them)"
               if probe.draws else "at the same input")
        return result("inconclusive", total=total, reasons=[*reasons, Reason(
            code="nondeterministic_forward", message=f"the program gave a different result when run again "
            f"{why}, so finite differences of it mean nothing")])
    elements: list[ElementCheck] = []
    low_step = False
    for done, (ti, k) in enumerate(flat):
        t = targets[ti]
        x = t.tensor.detach().reshape(-1)[k]
        xp, xm = (x + eps).to(x.dtype), (x - eps).to(x.dtype)
        hp, hm = float(xp - x), float(x - xm)
        if hp <= 0 or hm <= 0 or abs(hp - eps) > 0.01 * eps:
            low_step = True
        fp = _rows(execute(nudge(t, k, hp), up=upcast_ok)[1], direction).detach()
        fm = _rows(execute(nudge(t, k, -hm), up=upcast_ok)[1], direction).detach()
        if progress is not None:
            progress(done + 1, len(flat))
        checked = element(ti, t, k, [a[ti].reshape(-1)[k].item() for a in analytic], fp, fm, centre,
                          hp, hm, atol, rtol)
        if checked.kink and (checked.ok or checked.nonfinite):  # a kink the central difference hides
            wide = 10 * eps
            fp10 = _rows(execute(nudge(t, k, wide), up=upcast_ok)[1], direction).detach()
            fm10 = _rows(execute(nudge(t, k, -wide), up=upcast_ok)[1], direction).detach()
            checked.kink = kinks.confirmed(checked, fp10, fm10, centre, wide)
        elements.append(checked)
    if low_step:
        reasons.append(Reason(code="step_below_resolution", message=f"the step {eps:g} is below the "
                              f"resolution of {dtype} at some checked values: the differences are rounded"))
    verdict, worst = judge(elements)
    every = suspect.all_nodes(outputs)
    nonfinite.say(elements, targets, rows, reasons, lambda node: suspect.occurrence(node, every))
    verdict = settle(verdict, reasons, overlapping=bool(overlapping), cuts=probe.cuts)
    out = result(verdict, tensors=[CheckedTensor(name=t.name, shape=list(t.tensor.shape), dtype=dtype,
                                                 numel=t.tensor.numel(), checked=sum(1 for ti, _ in flat if ti == i))
                                   for i, t in enumerate(targets)],
                 elements=elements, worst=worst, checked=len(elements), total=total,
                 failed=sum(1 for e in elements if failed(e)),
                 kinks=sum(1 for e in elements if e.kink))
    if not any(r.code == "nondeterministic_backward" for r in reasons):  # that one says it first
        linearity.judge(out, outputs, tensors, probe.sites, lambda node: suspect.occurrence(node, every))
    suspect.explain(out, outputs, probe, targets, rows, direction, execute, upcast_ok)
    out.executions, out.seconds = runs, time.perf_counter() - started
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, with NaN equal to NaN: NaN != NaN is no sign of a nondeterministic backward."""
    return bool(torch.equal(a, b) or ((a == b) | (a.isnan() & b.isnan())).all())


def _grads(row: torch.Tensor, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    if not row.requires_grad:
        return [torch.zeros_like(t, dtype=torch.float64) for t in tensors]
    gs = torch.autograd.grad(row, tensors, retain_graph=True, allow_unused=True)
    return [torch.zeros_like(t, dtype=torch.float64) if g is None else g.detach().to(torch.float64)
            for g, t in zip(gs, tensors, strict=True)]
