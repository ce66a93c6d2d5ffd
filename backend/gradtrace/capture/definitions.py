"""Where the snippet's tensors come from: the line that defines each leaf, the variable each
intermediate result is bound to, and the parameters a module keeps frozen.

NOTE [where leaves are defined]
    A leaf's tensor node is made where autograd first meets it: its first use, which is the
    node's ``line``. The line that *defines* it is noted apart (``Node.def_line``), where it
    becomes a leaf requiring grad: a torch call given ``requires_grad=True`` (``torch.randn(3,
    requires_grad=True)``), ``requires_grad_()`` or ``t.requires_grad = True`` (all three pass
    through the torch-function mode, which hands them to :meth:`LeafLines.note`), and, for a
    parameter, its registration on a module (torch's global parameter-registration hook): the
    snippet line current then is the module's construction (``model = nn.Linear(3, 4)``; the
    line inside the snippet's own ``__init__`` for its own modules). A tied parameter keeps its
    first registration. The tensors are held by weak reference: noting a definition never keeps
    a tensor alive, and at most ``_MAX_LEAVES`` are noted.

NOTE [variables of intermediates]
    ``h = torch.tanh(x @ W)`` binds the TanhBackward0 node's output to ``h`` once the line has
    run. When the line tracer moves on (``Recorder._on_step``, after the line's nodes were
    walked), the innermost snippet frame's variables are looked at: each tensor whose
    ``grad_fn`` is a recorded node not named yet gives that node its variable (``Node.var``);
    the first name seen stays. Only steps after new nodes were recorded look (a wake-up is
    asked for when nodes were walked outside a step), and only the newest ``_MAX_VARS``
    variables of a namespace in dict order (a notebook's globals can hold thousands; a name
    bound long before and rebound now keeps its old place, and is then missed there), so a GRU
    unrolled 200 steps pays a few microseconds per line (``bench/bench_capture.py``).
    Reading ``grad_fn`` of a view whose base changed in place since makes autograd build a
    new node for it (``AsStridedBackward0``): a node the program never made. So a view's
    ``grad_fn`` is never read here: the torch-function mode keeps each view result's node as
    the call returned it (``Recorder.fresh_views``, until the next look), and only those
    views are named. For other tensors a sequence number handed out during the read (which
    would mean a node was built) leaves the tensor unnamed.

NOTE [frozen parameters]
    A parameter with ``requires_grad=False`` makes no autograd node, so the graph cannot show
    it. The module that holds it says so instead: its own frozen parameters' names, noted on
    the module path's first call (``ModuleInfo.frozen``). Its parameters that do require grad
    but that no recorded node ever used (a layer defined and never called in ``forward``, a
    weight read through ``.data``) are listed at the end of a run with a backward pass
    (``ModuleInfo.unreached``): the graph cannot show them either.
"""

from __future__ import annotations

import itertools
import weakref
from types import FrameType
from typing import Any

import torch
from torch import nn

_MAX_LEAVES = 100_000
_MAX_VARS = 128
_seq_nr = torch._C._autograd._get_sequence_nr


class LeafLines:
    """The line each leaf requiring grad was defined on (NOTE [where leaves are defined])."""

    def __init__(self) -> None:
        self._lines: dict[int, tuple[weakref.ref[torch.Tensor], int]] = {}

    def note(self, t: object, line: int | None) -> None:
        """``t`` became a leaf requiring grad on ``line`` (the first time counts)."""
        if line is None or not isinstance(t, torch.Tensor) or len(self._lines) >= _MAX_LEAVES:
            return
        with torch._C.DisableTorchFunction():
            if not (t.requires_grad and t.grad_fn is None):
                return
        hit = self._lines.get(id(t))
        if hit is not None and hit[0]() is t:
            return
        try:
            self._lines[id(t)] = (weakref.ref(t), line)
        except TypeError:  # a tensor type without weak references: not noted
            return

    def line_of(self, t: torch.Tensor) -> int | None:
        hit = self._lines.get(id(t))
        if hit is None or hit[0]() is not t:
            return None
        return hit[1]


def watch_parameters(rec: Any) -> Any:
    """Note each parameter's module-registration line while the block runs (NOTE [where
    leaves are defined]); returns the hook's handle (``.remove()``)."""

    def registered(module: nn.Module, name: str, param: Any) -> None:
        if torch.compiler.is_compiling():  # NOTE [invisible to dynamo] in compiled.py
            return
        try:
            rec.leaf_lines.note(param, rec.current_line())
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)

    return nn.modules.module.register_module_parameter_registration_hook(registered)


def trainable_parameters(module: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """``module``'s parameters that require grad, its submodules' too (``b.weight``: a layer
    never called has no call of its own to note them), to tell at the end which of them no
    recorded node ever used (NOTE [frozen parameters]: ``ModuleInfo.unreached``)."""
    try:
        return [(name, p) for name, p in module.named_parameters() if p.requires_grad]
    except Exception:  # a module whose parameters cannot be listed: nothing to say of it
        return []


def unreached(path: str, params: list[tuple[str, torch.Tensor]], tensors: dict[int, Any],
              called: Any) -> list[str]:
    """Those of ``params`` (of the module at ``path``) that have no tensor node (``tensors``:
    the recorder's id → (tensor, node) map) and no ``.grad`` at the end (a reentrant
    checkpoint's inner backward fills ``.grad`` of parameters the graph does not show): read
    only through ``.data``, under ``no_grad``, or never; a parameter of a submodule that was
    called itself is left to that module."""
    out = []
    for name, p in params:
        owner = name.rpartition(".")[0]
        if owner and f"{path}.{owner}" in called:
            continue
        hit = tensors.get(id(p))
        # a non-leaf in a parameter's place (``torch.func.functional_call``) has a history: it
        # was reached, and its ``.grad`` is not read (torch warns of that read)
        if (hit is None or hit[0] is not p) and p.requires_grad and p.is_leaf and p.grad is None:
            out.append(name)
    return out


def frozen_parameters(module: nn.Module) -> list[str]:
    """``module``'s own parameters that do not require grad (NOTE [frozen parameters])."""
    return [name for name, p in module._parameters.items()
            if p is not None and not p.requires_grad]


def name_results(rec: Any, space: dict[str, Any]) -> None:
    """Give recorded, unnamed function nodes the variable in ``space`` bound to their output
    (NOTE [variables of intermediates]); ``rec``: the
    :class:`~gradtrace.capture.recorder.Recorder` (which imports this module)."""
    # the newest _MAX_VARS variables, copied before any look-up, then in dict order (`first,
    # second = x.max(0)`: the node of both outputs takes the first)
    items = list(itertools.islice(reversed(space.items()), _MAX_VARS))
    items.reverse()
    core = rec.core
    named = rec.var_names
    with torch._C.DisableTorchFunction():
        for key, value in items:
            if not isinstance(value, torch.Tensor) or key.startswith("_") or not value.requires_grad:
                continue
            if value._is_view():  # its node as the torch call that made it returned it
                hit = rec.fresh_views.get(id(value))
                if hit is None or hit[0] is not value:
                    continue
                g = hit[1]
            else:
                before = _seq_nr()
                g = value.grad_fn
                if g is None or _seq_nr() != before:
                    continue
            index = core.index_of(g)
            if index < 0 or index in named:
                continue
            named.add(index)
            core.set_var(index, key)
            rec.size_estimate += len(key) + 10


def frame_space(frame: FrameType | None) -> dict[str, Any] | None:
    """The variables of a snippet frame (a function's locals, or the module's globals)."""
    return frame.f_locals if frame is not None else None
