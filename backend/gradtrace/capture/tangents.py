"""Forward-mode AD: the torch calls that carried a tangent, in order, with their values.

NOTE [forward-mode AD]
    Inside ``torch.autograd.forward_ad.dual_level()`` a dual tensor (``make_dual(primal,
    tangent)``) carries its tangent through every op, computed *during the forward* by each op's
    forward-mode formula: there is no backward pass, and on tensors that do not require grad no
    autograd node at all. So it is recorded as what it is, a forward pass carrying tangents:
    while a dual level is open (``forward_ad._current_level``, one module-global read per torch
    call), each torch call whose tensor result has a tangent at that level is one
    ``ForwardTangent`` (docs/CONTRACT.md): the op, its line, the earlier steps whose results
    it took (``inputs``), its primal and its tangent as TensorValues (values when small, stats
    always, from the document's values budget), and the backward-graph node the same call made
    when its inputs also required grad. ``unpack_dual`` only reads a tangent: it makes no step.
    Names come from the snippet's variables at the end (``dual_output``). At most
    ``MAX_STEPS`` steps are kept; the document says how many more there were.
"""

from __future__ import annotations

from typing import Any

import orjson
import torch
import torch.autograd.forward_ad as fwAD

from gradtrace.capture.frames import NameIndex
from gradtrace.schema.canonical import TensorValueDict

MAX_STEPS = 2000
"""Steps kept per run (each one about 400 bytes)."""
STEP_COST = 2 * 185 + 160
"""Upper estimate of a step's JSON bytes (NOTE [limits] in recorder.py)."""


def level() -> int:
    """The innermost open dual level, -1 when none."""
    return int(fwAD._current_level)


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return []


def _full(value: Any) -> Any:
    """A lazy TensorValue (NOTE [lazy TensorValues] in values.py) with its keys too: this part
    of the document is a plain dict, written and read as it is (NOTE [capture's one exit] in
    captured.py)."""
    native = getattr(value, "native", None)
    if native is None:
        return value
    full = TensorValueDict(orjson.loads(native))
    full.native = native
    return full


class Tangents:
    """The steps of forward-mode AD seen so far (NOTE [forward-mode AD])."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.more = 0
        self._by_tensor: dict[int, tuple[torch.Tensor, int]] = {}
        """id(result) -> (result, step index): which step a later call's argument came from."""
        self._kept: list[tuple[torch.Tensor, Any]] = []
        """Per step: its result and its autograd node (None), for names and ids at the end."""

    def note(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
             line: int | None, values: Any, grow: Any) -> None:
        """One torch call ran with a dual level open: a step per result that has a tangent."""
        lvl = level()
        for t in _tensors(out):
            if t.is_sparse or t.layout != torch.strided:
                continue
            primal, tangent = fwAD.unpack_dual(t, level=lvl)  # type: ignore[no-untyped-call]
            if tangent is None:
                continue
            if len(self.steps) >= MAX_STEPS:
                self.more += 1
                continue
            grow(STEP_COST)
            inputs = []
            for a in (*args, *kwargs.values()):
                for x in _tensors(a):
                    hit = self._by_tensor.get(id(x))
                    if hit is not None and hit[0] is x and hit[1] not in inputs:
                        inputs.append(hit[1])
            index = len(self.steps)
            name = getattr(func, "__name__", None) or type(func).__name__
            self.steps.append({"index": index, "op": name.lstrip("_") if name == "_make_dual" else name,
                               "line": line, "level": lvl, "inputs": inputs,
                               "primal": values.capture(primal.detach()),
                               "tangent": values.capture(tangent.detach())})
            self._by_tensor[id(t)] = (t, index)
            self._kept.append((t, t.grad_fn))

    def document(self, values: Any, namespace: dict[str, Any] | None, index_of: Any) -> list[dict[str, Any]]:
        """The steps as the document writes them: values resolved, names and nodes found."""
        names = NameIndex(None, [namespace]) if namespace is not None else None
        out = []
        for step, (t, node) in zip(self.steps, self._kept, strict=True):
            found = index_of(node) if node is not None else -1
            out.append({**step, "primal": _full(values.resolve(step["primal"])),
                        "tangent": _full(values.resolve(step["tangent"])),
                        "name": names.name_of(t) if names is not None else None,
                        "node": f"n{found}" if found >= 0 else None})
        return out
