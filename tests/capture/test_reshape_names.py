"""Recording never changes which ops a program runs: the nodes of reshape, view, flatten,
einsum, matmul and expand programs are the nodes of a bare run, on both kernel sets, with and
without a tensor file.

Composite ops choose their path by what they are given, and ATen's ``isTensorSubclassLike``
answers true while any Python dispatch mode is on the stack: the composite ``reshape`` of a
tensor that is not contiguous but can be viewed then calls ``view`` (``ViewBackward0``) where a
bare run calls ``_reshape_alias`` (``ReshapeAliasBackward0``), and ``flatten``, ``einsum``,
``matmul`` of a 3-D tensor by a 2-D one and ``unflatten`` reach it. Both kernel sets' output
taps (capture/outputs.py, cxx/tap.h) are a fallback on a dispatch key of their own, no Python
mode, so the programs below must build the very graph of their bare run. ``MODE_DIVERGES``
names the programs a Python dispatch mode does change, checked here too: a program that stopped
exercising the case would no longer test it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import gradtrace

Program = Callable[[torch.Tensor, torch.Tensor], list[torch.Tensor]]
PROGRAMS: dict[str, Program] = {
    "contiguous": lambda x, y: [x.reshape(6, 4), x.view(24), x.flatten(), y.reshape(2, 12)],
    "transposed": lambda x, y: [x.t().reshape(6, 2, 2), y.t().reshape(3, 2, 4), y.movedim(0, 1).reshape(6, 4)],
    "sliced": lambda x, y: [y[:, ::2].reshape(2, 2, 3), y[:, :2].flatten()],
    "copied": lambda x, y: [y.t().flatten(0), y.expand(2, 4, 6).reshape(8, 6), x.t().reshape(24)],
    "expand": lambda x, y: [x[:, :1].expand(4, 5), y.unsqueeze(0).flatten(0, 1), y.unflatten(1, (2, 3))],
    "flatten": lambda x, y: [y.t().flatten(), y[:, ::2].flatten(0, 1), y.unsqueeze(1).flatten(1),
                             y.view(2, 2, 6).transpose(0, 1).flatten(1)],
    "contiguous-view": lambda x, y: [y.t().contiguous().view(24), y.contiguous().view(6, 4),
                                     y[:, 1:].contiguous().view(-1)],
    "einsum": lambda x, y: [torch.einsum("ij,kj->ik", y, x), torch.einsum("ij->ji", y),
                            torch.einsum("bij,jk->bik", y.view(2, 2, 6), x.t()),
                            torch.einsum("ij,ij->i", y.t(), x.t())],
    "matmul-3d-2d": lambda x, y: [y.view(2, 2, 6) @ x.t(), torch.matmul(y.t().reshape(3, 2, 4), x),
                                  y.t().unsqueeze(0).expand(2, 6, 4) @ x],
    "expand-as": lambda x, y: [y[:, :1].expand_as(y), y[:1].expand_as(x).reshape(6, 4),
                               y.t()[:, :1].expand(6, 4).reshape(24), y[:, :1].t().expand(3, 4).reshape(12)],
    "unflatten": lambda x, y: [y.unflatten(1, (2, 3)), y.t().unflatten(0, (2, 3)),
                               y[:, ::2].unflatten(1, (3, 1)).flatten(1)],
}
MODE_DIVERGES = {"transposed", "sliced", "flatten", "einsum", "matmul-3d-2d", "unflatten"}
"""Programs whose graph a Python dispatch mode changes (a reshape that views a tensor that is
not contiguous: ``_reshape_alias`` in a bare run, ``view`` under the mode)."""


class _PassThrough(TorchDispatchMode):
    """A Python dispatch mode that changes nothing but being there."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def _graph(program: str) -> tuple[list[str], list[str]]:
    """(the names of the program's results' nodes, the names of every node they reach in
    creation order) of ``program`` run now."""
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    y = x * 2
    outs = PROGRAMS[program](x, y)
    seen: set[Any] = set()
    found: list[tuple[int, str]] = []
    todo = [o.grad_fn for o in outs]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        found.append((fn._sequence_nr(), fn.name()))
        todo.extend(f for f, _ in fn.next_functions)
    return [o.grad_fn.name() for o in outs], [name for _, name in sorted(found)]


def _recorded(program: str, native: bool, budget: int | None) -> tuple[list[str], list[str]]:
    with gradtrace.record(native=native, tensor_budget=budget) as rec:
        graph = _graph(program)
    doc = rec.document()
    recorded = {n.name for n in doc.graph.nodes}
    assert {n for n in graph[1] if "AccumulateGrad" not in n} <= recorded  # the document names them
    if budget is not None:
        assert rec.recorder.tensor_file is not None  # the file was made
    return graph


CASES = [pytest.param(program, native, budget, id=f"{program}-{kid}-{bid}")
         for program in PROGRAMS
         for native, kid in ((True, "core"), (False, "python"))
         for budget, bid in ((None, "no-file"), (1 << 20, "file"))]


@pytest.mark.parametrize(("program", "native", "budget"), CASES)
def test_nodes_are_those_of_a_bare_run(program: str, native: bool, budget: int | None) -> None:
    bare = _graph(program)
    if program in MODE_DIVERGES:
        assert "ReshapeAliasBackward0" in bare[1]  # the case this test is about is in the program
    assert _recorded(program, native, budget) == bare


@pytest.mark.parametrize("program", sorted(MODE_DIVERGES))
def test_a_python_dispatch_mode_would_change_these_programs(program: str) -> None:
    """The programs above test what they claim: under a Python dispatch mode their graph is not
    the bare run's (so a tap that were one would fail them)."""
    with _PassThrough():
        moded = _graph(program)
    assert moded != _graph(program)
    assert "ReshapeAliasBackward0" not in moded[1]
