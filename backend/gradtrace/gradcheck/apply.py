"""``torch.autograd.Function.apply`` routed through the probe: a custom Function's apply does
not pass through torch-function modes, so the check patches it while it runs.

NOTE [torch's checks inside a re-run]
    A snippet that calls ``torch.autograd.gradcheck`` / ``gradgradcheck`` runs them again in
    each re-run. The run document folds them (NOTE [torch's own checks are folded] in
    ``capture/folded.py``): none of their nodes or backward calls is in it, so the passes and
    the Function calls the user picks are counted without them. The probe must count the same
    way, so while one of torch's checks runs the probe looks away (``Probe.aside``): its
    backward calls are no pass, its Function calls no occurrence, and nothing of it is nudged.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, Protocol

import torch
import torch.autograd.gradcheck


class Watcher(Protocol):
    """What sees each ``apply``: the probe, or forward mode's call list (``gradcheck/forward.py``)."""

    def apply_function(self, original: Callable[..., Any], cls: type, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any: ...


_gradcheck_module = sys.modules["torch.autograd.gradcheck"]
_CHECKS = ("gradcheck", "gradgradcheck")


class FunctionApplyPatch:
    """While active, ``torch.autograd.Function.apply`` reports to ``probe`` (a custom Function's
    apply does not pass through torch-function modes), and torch's own checks run with the probe
    looking away (NOTE [torch's checks inside a re-run])."""

    def __init__(self, probe: Watcher) -> None:
        self.probe = probe
        self._saved: Any = None
        self._checks: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> FunctionApplyPatch:
        fn_cls = torch.autograd.Function
        self._saved = fn_cls.__dict__["apply"]
        # One wrapper per probe, kept across executions (NOTE [one probe for every execution]):
        # compiled code guards on what it called, and a new wrapper each time would recompile.
        wrapper = getattr(self.probe, "_apply_wrapper", None)
        if wrapper is None:
            original = self._saved.__func__
            probe = self.probe

            def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
                return probe.apply_function(lambda *a, **k: original(cls, *a, **k), cls, args, kwargs)

            wrapper = classmethod(apply)
            self.probe._apply_wrapper = wrapper  # type: ignore[attr-defined]
        fn_cls.apply = wrapper  # type: ignore[method-assign,assignment]
        for name in _CHECKS if hasattr(self.probe, "aside") else ():  # a watcher of a snippet's re-run
            check = getattr(_gradcheck_module, name)
            aside = _looking_away(self.probe, check)
            for owner in (_gradcheck_module, torch.autograd):
                if getattr(owner, name, None) is check:
                    self._checks.append((owner, name, check))
                    setattr(owner, name, aside)
        return self

    def __exit__(self, *exc: object) -> None:
        torch.autograd.Function.apply = self._saved  # type: ignore[method-assign]
        checks, self._checks = self._checks, []
        for owner, name, check in reversed(checks):
            setattr(owner, name, check)


def _looking_away(probe: Any, check: Any) -> Any:
    """``check`` run with ``probe.aside`` raised; one wrapper per probe and check, kept across
    executions (compiled code guards on what it called)."""
    cache: dict[Any, Any] = probe.__dict__.setdefault("_aside_wrappers", {})
    if check not in cache:
        @functools.wraps(check)
        def aside(*args: Any, **kwargs: Any) -> Any:
            probe.aside += 1
            try:
                return check(*args, **kwargs)
            finally:
                probe.aside -= 1

        cache[check] = aside
    return cache[check]
