"""What counts as a cut for the gradient check: a call in the user's code that takes a tensor
requiring grad out of the graph (``detach()``, ``.data``, an op under ``no_grad``, an integer
cast). Calls that torch's own code makes (``torch.autograd.gradcheck``'s evaluations, a
module's running statistics) and a custom Function's own forward (which always runs without
grad) are no cut: autograd leaves nothing out of the user's program there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

_INT_CASTS = {"long", "int", "short", "char", "byte"}
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HERE = os.path.dirname(__file__) + os.sep
_GLUE = (os.path.join(_TORCH_DIR, "overrides.py"), os.path.join(_TORCH_DIR, "_tensor.py"))


def not_library(filename: str) -> bool:
    return not filename.startswith((_TORCH_DIR, _HERE))


def cut_by(name: str, grad_on: bool, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """What takes a tensor that requires grad out of the graph: ``detach()``, ``.data``, an op
    under ``no_grad``, an integer cast; None for anything else (``.T`` is a property too)."""
    if not grad_on:
        return f"{name} under no_grad"
    if name == "detach":
        return "detach()"
    if name == "__get__":
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        return ".data" if prop == "data" else None
    if name in _INT_CASTS:
        return f".{name}()"
    if name in ("to", "type"):
        for a in (*args, *kwargs.values()):
            if isinstance(a, torch.dtype) and not (a.is_floating_point or a.is_complex):
                return f".{name}({str(a).removeprefix('torch.')})"
    return None




def by_user(user_file: Callable[[str], bool]) -> bool:
    """Whether the torch call being handled (by the probe's ``__torch_function__``, two frames
    up) was made by the user's code: its caller (past torch's dispatch glue) is the user's, or
    is the torch function itself, called by the user."""
    frame: FrameType | None = sys._getframe(3)
    while frame is not None and frame.f_code.co_filename in _GLUE:
        frame = frame.f_back
    if frame is None:
        return False
    if user_file(frame.f_code.co_filename):
        return True
    caller = frame.f_back
    return caller is not None and user_file(caller.f_code.co_filename) and \
        frame.f_code.co_filename.startswith(_TORCH_DIR)
