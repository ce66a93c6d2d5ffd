"""Forward mode's suspect: which custom Function's ``jvp`` disagrees with its own forward
(NOTE [checking a jvp] in ``forward.py``). Each Function the checked code defines and called
is checked alone, on the inputs it was called with, along a seeded random tangent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.autograd.forward_ad as fwAD

from gradtrace.analysis.gradcheck.verdict import blame_jvp
from gradtrace.schema.gradcheck import Suspect

_UPCASTABLE = {torch.float32, torch.float16, torch.bfloat16}
make_dual = cast(Callable[[torch.Tensor, torch.Tensor], torch.Tensor], fwAD.make_dual)
unpack_dual = cast(Callable[[torch.Tensor], Any], fwAD.unpack_dual)


def has_jvp(cls: type) -> bool:
    """Whether a Function class overrides ``jvp`` (torch's own raises NotImplementedError)."""
    return getattr(cls, "jvp", None) is not torch.autograd.Function.jvp


@dataclass
class Call:
    cls: type
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _outputs(out: Any) -> list[torch.Tensor]:
    return [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]


def _flat(outputs: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([o.detach().reshape(-1).to(torch.float64) for o in outputs])


def suspect(called: list[Call], seed: int, eps: float, atol: float, rtol: float,
             user_file: Callable[[str], bool], occurrence: dict[str, int]) -> Suspect | None:
    """The first custom Function whose jvp disagrees with its own forward: those the code defines
    first (where a wrong jvp usually is), then the others (a library's)."""
    seen: dict[str, int] = {}
    order: list[tuple[bool, int, Call, str]] = []
    for c in called:
        name = c.cls.__name__ + "Backward"
        nth = seen[name] = seen.get(name, -1) + 1
        code = getattr(getattr(c.cls, "forward", None), "__code__", None)
        order.append((code is not None and user_file(code.co_filename), nth, c, name))
    for user, nth, c, name in sorted(order, key=lambda o: not o[0]):
        if has_jvp(c.cls) and not _jvp_agrees(c, seed + nth, eps, atol, rtol):
            return blame_jvp(c.cls.__name__, occurrence.get(name, 0) + nth, user)
    return None


def _jvp_agrees(c: Call, seed: int, eps: float, atol: float, rtol: float) -> bool:
    """One Function call alone: ``jvp`` along a seeded random tangent against central differences."""
    g = torch.Generator().manual_seed(seed)
    args = [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.dtype in _UPCASTABLE else a for a in c.args]
    floating = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.is_floating_point()]
    v = {i: torch.randn(args[i].shape, generator=g, dtype=torch.float64).to(args[i].dtype) for i in floating}

    def apply(*a: Any) -> list[torch.Tensor]:
        return _outputs(c.cls.apply(*a, **c.kwargs))  # type: ignore[attr-defined]

    try:
        with fwAD.dual_level():
            duals = [make_dual(a, v[i]) if i in v else a for i, a in enumerate(args)]
            analytic = torch.cat([torch.zeros(o.numel(), dtype=torch.float64) if (t := unpack_dual(o).tangent)
                                  is None else t.detach().reshape(-1).to(torch.float64) for o in apply(*duals)])
        with torch.no_grad():
            fp = _flat(apply(*[a + eps * v[i] if i in v else a for i, a in enumerate(args)]))
            fm = _flat(apply(*[a - eps * v[i] if i in v else a for i, a in enumerate(args)]))
    except Exception:
        return True  # nothing to say about it alone
    numeric = (fp - fm) / (2 * eps)
    return bool(((analytic - numeric).abs() <= atol + rtol * numeric.abs()).all())
