"""The probe: one execution of a program with one tensor nudged, answering the scalar it reached.

NOTE [how a re-run finds the same tensor]
    A snippet re-run from scratch under the same seed makes the same tensors in the same order,
    but as new objects. The probe (a TorchFunctionMode, like capture's tap in ``capture/mode.py``)
    therefore names tensors by *when* they appear, which is the same in every execution:

    * a leaf that requires grad gets an ordinal the first time a torch call sees it while grad
      mode is on (as an argument or as a result): ``torch.tensor(..., requires_grad=True)`` at
      its creation, an ``nn.Parameter`` at its first use, after its initialisation under
      ``no_grad`` has already filled it;
    * every tensor with a ``grad_fn`` that a torch call (or a custom Function's ``apply``)
      returns gets a *site*: the call's ordinal and the output's position.

    A :class:`Nudge` says which of them to move and by how much; the probe adds it at that
    moment, before anything has used the tensor. The scalar is what the checked backward call
    (``Tensor.backward``, ``torch.autograd.backward`` / ``grad``) would differentiate:
    ``sum(root * grad_tensor)``; the execution stops there (:class:`Stop`).

NOTE [checking a later backward pass]
    Backward calls are counted in call order, as the run document's ``passes[].index`` counts
    them. To check pass ``k``, the earlier ``k`` calls run for real (an optimizer steps after
    them as it did in the run), and every ordinal starts again after each of them: the leaves
    and sites of pass ``k`` are those seen after backward call ``k - 1`` returned. A parameter
    is therefore nudged at its first use after that call, that is at its value in iteration
    ``k``, not at its initial value (which would differentiate the whole trajectory).

NOTE [one probe for every execution]
    ``torch.compile`` keeps the torch-function mode that was active when it compiled and puts
    that very object back on the mode stack when its compiled code runs. A new probe per
    execution would then be replaced by a stale one (the baseline's) inside compiled code, so
    one probe serves every execution of a check and is :meth:`Probe.reset` between them.

NOTE [upcast in place]
    Checking in float64 must not change the program's numbers: a float32 tensor is upcast when
    it first takes part in a differentiable computation (the same moment as above, and for any
    floating tensor without history), by replacing its ``.data``. Its values were already drawn
    and initialised in float32, so the seeded randomness stays the user's. A snippet that then
    casts back (``.float()``) or insists on float32 is found out after the run: its scalar is
    not float64, and the check says so and runs in the program's own dtype instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from gradtrace.gradcheck.calls import backward_scalar as _scalar
from gradtrace.gradcheck.calls import tensors_in as _tensors
from gradtrace.gradcheck.cuts import by_user, cut_by, not_library

_is_compiling = torch.compiler.is_compiling
_BACKWARDS = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad}
_UPCASTABLE = {torch.float32, torch.float16, torch.bfloat16}


class Stop(BaseException):
    """Ends an execution at its first backward call (a BaseException: ``except Exception`` in
    the snippet cannot swallow it)."""


@dataclass(frozen=True, slots=True)
class Nudge:
    """Move one tensor of the execution: ``kind`` is ``leaf`` (key: the leaf's ordinal),
    ``site`` (key: (call, output)) or ``arg`` (key: (call, argument position)); ``delta`` is
    added to it (same shape, float64)."""

    kind: str
    key: Any
    delta: torch.Tensor


@dataclass(slots=True)
class Site:
    call: int
    pos: int
    tensor: torch.Tensor
    name: str
    custom: bool
    inputs: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    """(argument position, tensor) of the call's arguments that require grad."""
    user: bool = False
    """A custom Function whose class the user's code defines (not one of torch's own)."""


class Probe(TorchFunctionMode):
    """Watches one execution (NOTE [how a re-run finds the same tensor])."""

    def __init__(self, *, upcast: bool, nudge: Nudge | None = None, keep_sites: bool = False,
                 substitute: dict[int, torch.Tensor] | None = None, pass_index: int = 0,
                 user_file: Callable[[str], bool] | None = None) -> None:
        super().__init__()
        self.pass_index = pass_index
        self.aside = 0
        """Above 0 while one of torch's checks runs (NOTE [torch's checks inside a re-run] in apply.py)."""
        self.user_file = user_file or not_library
        """Whether a source file is the user's (a cut counts only when the user's code makes it)."""
        self.reset(upcast=upcast, nudge=nudge, keep_sites=keep_sites, substitute=substitute)

    def reset(self, *, upcast: bool, nudge: Nudge | None = None, keep_sites: bool = False,
              substitute: dict[int, torch.Tensor] | None = None) -> Probe:
        """Ready for another execution (NOTE [one probe for every execution]); every container
        is replaced, never cleared, so a ``copy.copy`` of the last execution keeps its own."""
        self.substitute = substitute or {}
        """``{leaf ordinal: tensor}`` used in the leaf's place by every torch call: the program
        as a differentiable function of those tensors (what the tests hand to
        ``torch.autograd.gradcheck``)."""
        self.upcast = upcast
        self._nudge = nudge
        self._keep_sites = keep_sites
        self.backwards = 0
        """Backward calls that ran (NOTE [checking a later backward pass])."""
        self.draws = False
        """The execution consumed the CPU generator after its seeding (set by the program)."""
        self.upcast_failures: list[str] = []
        self.upcasts = 0
        self.outputs: list[torch.Tensor] | None = None
        self.stopped = False
        self._segment()
        return self

    def _segment(self) -> None:
        """Every ordinal starts again (NOTE [checking a later backward pass]); nudges and sites
        only in the checked pass's segment."""
        live = self.backwards == self.pass_index
        self.nudge = self._nudge if live else None
        self.keep_sites = self._keep_sites and live
        self.leaves: list[torch.Tensor] = []
        self._leaf_ids: dict[int, int] = {}
        self._held: list[torch.Tensor] = []  # keeps ids unique while the execution runs
        self._seen: set[int] = set()
        self.calls = 0
        self.sites: list[Site] = []
        self.applies: dict[str, int] = {}
        self._forward_depth = 0  # inside a custom Function's forward (no_grad there is no cut)
        self.cuts: list[str] = []
        """Calls that took a tensor requiring grad out of the graph (``detach()``, an op under
        ``no_grad``): the scalar can depend on the target in ways autograd leaves out."""
        self.overlapping: set[int] = set()
        """Ordinals of leaves whose elements share memory (an expanded tensor)."""

    # -- tensors ---------------------------------------------------------------------------

    def adopt(self, t: torch.Tensor, *, overlapping: bool = False) -> None:
        """Give a leaf its ordinal (and its upcast and nudge) now."""
        if id(t) in self._leaf_ids:
            return
        if overlapping or (t.layout == torch.strided and torch._debug_has_internal_overlap(t) == 1):
            self.overlapping.add(len(self.leaves))
        self._upcast(t)
        self._leaf_ids[id(t)] = len(self.leaves)
        self.leaves.append(t)
        n = self.nudge
        if n is not None and n.kind == "leaf" and n.key == len(self.leaves) - 1:
            with torch.no_grad():
                t.add_(n.delta.to(t.dtype))

    def _upcast(self, t: torch.Tensor) -> None:
        if self.upcast and t.dtype in _UPCASTABLE and not t.is_sparse:
            try:
                t.data = t.data.to(torch.float64)
                self.upcasts += 1
            except RuntimeError as e:
                self.upcast_failures.append(str(e).split("\n")[0])

    def _see(self, t: Any) -> None:
        if not isinstance(t, torch.Tensor) or id(t) in self._seen:
            return
        if t.requires_grad and t.grad_fn is None:
            self._seen.add(id(t))
            self._held.append(t)
            self.adopt(t)
        elif t.grad_fn is None and t.is_floating_point():
            self._seen.add(id(t))
            self._held.append(t)
            self._upcast(t)

    # -- the mode --------------------------------------------------------------------------

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if _is_compiling() or self.aside:
            return func(*args, **kwargs)
        if self.stopped:
            raise Stop()
        if func in _BACKWARDS:
            if self.backwards < self.pass_index:
                result = func(*args, **kwargs)
                self.backwards += 1
                self._segment()
                return result
            self.outputs = [_scalar(func, args, kwargs)]
            self.stopped = True
            raise Stop()
        grad_on = torch.is_grad_enabled()
        name = getattr(func, "__name__", "")
        in_place = name.endswith("_") and not name.startswith("__")
        if not self._forward_depth and not in_place and _takes_grad(args):
            cut = cut_by(name, grad_on, func, args, kwargs)
            if cut is not None and self._by_user():
                self.cuts.append(cut)
        if grad_on and not name.endswith("_"):  # an initialiser (``kaiming_uniform_``) writes its argument
            for t in _tensors(args, kwargs):
                self._see(t)
        if self.substitute:
            args, kwargs = self._swap(args), {k: self._swap(v) for k, v in kwargs.items()}
        out = func(*args, **kwargs)
        if not grad_on:
            return out
        self.calls += 1
        for t in _tensors(out, {}):
            if t.requires_grad and t.grad_fn is None:
                self._see(t)
        return self._after_call(self.calls, name, out, args, custom=False)

    def _by_user(self) -> bool:
        return by_user(self.user_file)

    def _swap(self, a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            i = self._leaf_ids.get(id(a))
            return self.substitute.get(i, a) if i is not None else a
        if isinstance(a, (tuple, list)):
            return type(a)(self._swap(b) for b in a)
        return a

    def _after_call(self, call: int, name: str, out: Any, args: tuple[Any, ...], *, custom: bool,
                    user: bool = False) -> Any:
        """Nudge (or remember) the outputs of call ``call`` that carry history."""
        multi = isinstance(out, (tuple, list))
        outs = list(out) if multi else [out]
        arg_ids = {id(a) for a in _tensors(args, {})}
        changed = False
        for pos, t in enumerate(outs):
            if not isinstance(t, torch.Tensor) or t.grad_fn is None or id(t) in arg_ids:
                continue  # in-place results are their argument: never a site
            n = self.nudge
            if n is not None and n.kind == "site" and n.key == (call, pos):
                outs[pos] = t + n.delta.to(t.dtype)
                changed = True
            elif self.keep_sites:
                fn = t.grad_fn
                self.sites.append(Site(call, pos, t, fn.name() if fn is not None else name, custom,
                                       [(i, a) for i, a in enumerate(args)
                                        if isinstance(a, torch.Tensor) and a.requires_grad], user))
        if not changed:
            return out
        return type(out)(outs) if multi else outs[0]

    def apply_function(self, original: Callable[..., Any], cls: type, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any:
        """A custom Function's ``apply``: a site of its own, and the target of ``arg`` nudges."""
        if self.aside:
            return original(*args, **kwargs)
        if self.stopped:
            raise Stop()
        if not torch.is_grad_enabled() or _is_compiling():
            return self._forward(original, args, kwargs)
        for t in _tensors(args, kwargs):
            self._see(t)
        self.calls += 1
        call = self.calls
        n = self.nudge
        if self.substitute:
            args, kwargs = self._swap(args), {k: self._swap(v) for k, v in kwargs.items()}
        if n is not None and n.kind == "arg" and n.key[0] == call:
            args = tuple(a + n.delta.to(a.dtype) if i == n.key[1] else a for i, a in enumerate(args))
        out = self._forward(original, args, kwargs)
        forward = getattr(cls, "forward", None)
        code = getattr(forward, "__code__", None)
        user = code is not None and self.user_file(code.co_filename)
        return self._after_call(call, cls.__name__ + "Backward", out, args, custom=True, user=user)

    def _forward(self, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self._forward_depth += 1
        try:
            return original(*args, **kwargs)
        finally:
            self._forward_depth -= 1


def _takes_grad(args: tuple[Any, ...]) -> bool:
    return any(t.requires_grad for t in _tensors(args, {}))
