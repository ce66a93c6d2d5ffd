"""Recording never changes which ops a program runs: the nodes of reshape, view, flatten and
expand programs are named as in a bare run, on both kernel sets, with and without a tensor file.

The Python twin's output tap is a ``TorchDispatchMode`` (capture/outputs.py). While any Python
dispatch mode is on the stack, ATen's ``isTensorSubclassLike`` answers true
(``c10::impl::dispatch_mode_enabled()``), so the composite ``reshape`` of a tensor that is not
contiguous but can be viewed calls ``view`` (``ViewBackward0``) where a bare run calls
``_reshape_alias`` (``ReshapeAliasBackward0``); autograd has made the node before the mode sees
the op. The C++ core's tap is a dispatch key of its own, no Python mode, and records what the
bare run does. That one case is marked below as the known divergence (strict: it fails once
fixed)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradtrace

PROGRAMS = {
    "contiguous": lambda x, y: [x.reshape(6, 4), x.view(24), x.flatten(), y.reshape(2, 12)],
    "transposed": lambda x, y: [x.t().reshape(6, 2, 2), y.t().reshape(3, 2, 4), y.movedim(0, 1).reshape(6, 4)],
    "sliced": lambda x, y: [y[:, ::2].reshape(2, 2, 3), y[:, :2].flatten()],
    "copied": lambda x, y: [y.t().flatten(0), y.expand(2, 4, 6).reshape(8, 6), x.t().reshape(24)],
    "expand": lambda x, y: [x[:, :1].expand(4, 5), y.unsqueeze(0).flatten(0, 1), y.unflatten(1, (2, 3))],
}
DIVERGES = {"transposed", "sliced"}
"""Programs whose reshape views a non-contiguous tensor: ``_reshape_alias`` in a bare run."""


def _names(program: str) -> list[str]:
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    y = x * 2
    return [o.grad_fn.name() for o in PROGRAMS[program](x, y)]


def _recorded(program: str, native: bool, budget: int | None) -> list[str]:
    with gradtrace.record(native=native, tensor_budget=budget) as rec:
        names = _names(program)
    doc = rec.document()
    recorded = {n.name for n in doc.graph.nodes}
    assert set(names) <= recorded  # the document names the nodes the program made
    return names


CASES: list[Any] = []
for _program in PROGRAMS:
    for _native, _kid in ((True, "core"), (False, "python")):
        for _budget, _bid in ((None, "no-file"), (1 << 20, "file")):
            marks = []
            if not _native and _budget is not None and _program in DIVERGES:
                marks = [pytest.mark.xfail(strict=True, reason="the twin's Python dispatch mode makes reshape "
                                                               "call view (see the module's docstring)")]
            CASES.append(pytest.param(_program, _native, _budget, id=f"{_program}-{_kid}-{_bid}", marks=marks))


@pytest.mark.parametrize(("program", "native", "budget"), CASES)
def test_nodes_are_named_as_in_a_bare_run(program: str, native: bool, budget: int | None) -> None:
    bare = _names(program)
    if program in DIVERGES:
        assert "ReshapeAliasBackward0" in bare  # the case this test is about is in the program
    assert _recorded(program, native, budget) == bare
