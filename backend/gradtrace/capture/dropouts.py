"""Functional dropout left in training mode inside a module put in eval mode.

NOTE [functional dropout ignores eval()]
    ``model.eval()`` switches the ``training`` flag of every module, and an ``nn.Dropout``
    reads it; ``F.dropout(x, p)`` does not: its own ``training`` argument defaults to True, so
    a forward that calls it without ``training=self.training`` drops units in evaluation too
    (the outputs change from call to call, and an evaluation under ``no_grad`` records no node
    to show it). So each call of ``F.dropout`` (``dropout1d``/``2d``/``3d``, whose default is
    the same; the alpha dropouts default to False) is looked at when the capture's mode sees
    it: the snippet frame that called it (a ``forward`` of the snippet's own module) has a
    ``self`` in eval mode, and the snippet's source shows that call without a ``training``
    argument (the mode is handed every argument by keyword, so only the source tells the
    default from ``training=True`` written out: Monte Carlo dropout, on purpose). Its line is
    noted under the module call it ran in (``ModuleInfo.dropout_in_eval_lines``), for the
    ``train-mode-in-eval`` hint (gradtrace/analysis/hints/flow.py).
"""

from __future__ import annotations

import ast
import linecache
from typing import Any

import torch.nn.functional as F
from torch import nn

from gradtrace.capture import frames

DEFAULT_TRAINING = frozenset({F.dropout, F.dropout1d, F.dropout2d, F.dropout3d})
"""The functional dropouts whose ``training`` argument defaults to True."""

_NAMES = frozenset(f.__name__ for f in DEFAULT_TRAINING)
_MAX_LINES = 10


def default_training_lines(source: str) -> frozenset[int]:
    """The lines of ``source`` with a call of one of ``DEFAULT_TRAINING`` (by its name) given
    neither ``training=`` nor a third positional argument; empty when it cannot be parsed."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    found: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name not in _NAMES:
            continue
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        if len(node.args) >= 3 or starred or any(k.arg in ("training", None) for k in node.keywords):
            continue  # the flag is given (or may be: ``*args``, ``**kwargs``)
        found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(found)


class DropoutsInEval:
    """The lines of functional dropouts that ran in training mode inside modules in eval mode,
    by module path (NOTE [functional dropout ignores eval()])."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.by_path: dict[str, list[int]] = {}
        self._lines: frozenset[int] | None = None

    def note(self, module_path: Any, kwargs: dict[str, Any]) -> None:
        """A call of one of ``DEFAULT_TRAINING``, seen by the capture's mode with ``kwargs``, in
        the module call ``module_path`` (the innermost named one on the stack, or None)."""
        if module_path is None or not kwargs.get("training", True) or not kwargs.get("p", 0.5):
            return
        frame = frames.snippet_frame(self.filename, 3)
        if frame is None:
            return
        owner = frame.f_locals.get("self")
        if not isinstance(owner, nn.Module) or owner.training:
            return
        if self._lines is None:
            self._lines = default_training_lines("".join(linecache.getlines(self.filename)))
        line = frame.f_lineno
        if line not in self._lines:
            return
        lines = self.by_path.setdefault(str(module_path), [])
        if len(lines) < _MAX_LINES and line not in lines:
            lines.append(line)
