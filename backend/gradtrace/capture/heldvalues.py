"""The Python twin's side of NOTE [held gradients copied before a write] (``cxx/tap.h``): the
core's captured values (``_Value`` in pycore.py) that hold their tensor by alias, listed by
storage, so the output tap (:class:`~gradtrace.capture.outputs.OutputTap`) copies them before
an op writes there, as it copies forward outputs, and marks them stale after a write no op
announced (``Tap::hold_value`` / ``Tap::copy_values`` / ``Tap::stale``)."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from gradtrace.capture.unseen import unseen

STALE = -2
"""The version of what a write no op announced changed (``Tap::kStale``): no counter reads it
(an inference tensor's is -1)."""


def version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference tensor: no version counter (the core's -1)
        return -1


class HeldValues:
    """Values held by alias, by the address of their storage's memory."""

    __slots__ = ("by_storage",)

    def __init__(self) -> None:
        self.by_storage: dict[int, list[Any]] = {}

    def hold(self, key: int, v: Any) -> None:
        """``Tap::hold_value``: a plain dict append, atomic under the GIL on whichever thread
        the backward hook runs."""
        self.by_storage.setdefault(key, []).append(v)

    @unseen
    def copy(self, key: int) -> None:
        """``Tap::copy_values``: those on ``key`` still as captured, copied (the caller has the
        tap's key off and runs below autograd: no node, no version bump)."""
        for v in self.by_storage.pop(key, ()):
            if v.kept_copy or v.kept is None or version(v.kept) != v.kept_version:
                continue
            with contextlib.suppress(RuntimeError):  # cannot be copied: found changed at the end
                v.kept, v.kept_copy = v.kept.clone(), True

    def stale(self, key: int) -> None:
        """``Tap::stale``: those on ``key`` no longer hold what was recorded (left out as
        ``changed``)."""
        for v in self.by_storage.pop(key, ()):
            if not v.kept_copy and v.kept is not None:
                v.kept_version = STALE

    def clear(self) -> None:
        self.by_storage.clear()
