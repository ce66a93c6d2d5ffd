"""``torch.autograd.Function.apply`` routed through the probe: a custom Function's apply does
not pass through torch-function modes, so the check patches it while it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch


class Watcher(Protocol):
    """What sees each ``apply``: the probe, or forward mode's call list (``numcheck/forward.py``)."""

    def apply_function(self, original: Callable[..., Any], cls: type, args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> Any: ...


class FunctionApplyPatch:
    """While active, ``torch.autograd.Function.apply`` reports to ``probe`` (a custom Function's
    apply does not pass through torch-function modes)."""

    def __init__(self, probe: Watcher) -> None:
        self.probe = probe
        self._saved: Any = None

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
        return self

    def __exit__(self, *exc: object) -> None:
        torch.autograd.Function.apply = self._saved  # type: ignore[method-assign]
