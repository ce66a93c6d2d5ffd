"""The check against ``torch.autograd.gradcheck`` on Functions it has never seen: torch's own
``autograd_function_db`` (every entry, one sample each: 14 entries, a few seconds) and the
"Extending PyTorch" Functions of ``extending.py``, called as the docs call them,
``gradcheck(Fn.apply, inputs)`` with a non-scalar output. Same pass/fail verdict as torch
(``fast_mode=False``, float64); on every fail, the Function named as the suspect."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch

from gradcheck.extending import CASES, Case
from gradtrace.gradcheck import gradcheck

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the opinfo machinery's import-time warnings
    from torch.testing._internal.autograd_function_db import autograd_function_db


def torch_verdict(fn: Any, inputs: tuple[Any, ...]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = torch.autograd.gradcheck(fn, inputs, fast_mode=False, raise_exception=False)
    return "pass" if ok else "fail"


def _functions_in(out: Any) -> set[str]:
    """The custom Functions' node names in ``out``'s graph."""
    outs = [out] if isinstance(out, torch.Tensor) else [o for o in out if isinstance(o, torch.Tensor)]
    seen: set[Any] = set()
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    names: set[str] = set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if isinstance(n, torch.autograd.function.BackwardCFunction):
            names.add(n.name())
        stack.extend(m for m, _ in n.next_functions if m is not None)
    return names


def _samples() -> list[tuple[str, Any, tuple[Any, ...]]]:
    out = []
    for op in autograd_function_db:
        for s in op.sample_inputs("cpu", torch.float64, requires_grad=True):
            out.append((op.name, op.op, (s.input, *s.args)))
    return out


SAMPLES = _samples()


def test_the_db_is_there_and_every_entry_is_sampled() -> None:
    assert len({name for name, _, _ in SAMPLES}) == len(autograd_function_db) >= 10


@pytest.mark.parametrize("sample", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_db_entry_verdict_equals_torch(sample: tuple[str, Any, tuple[Any, ...]]) -> None:
    _name, fn, inputs = sample
    ours = gradcheck(fn, inputs, max_elements=512)
    assert ours.verdict == torch_verdict(fn, inputs), ours.summary()
    if ours.verdict == "fail":
        assert ours.suspect is not None and ours.suspect.name in _functions_in(fn(*inputs)), ours.summary()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_extending_function_verdict_equals_torch_and_names_the_function(case: Case) -> None:
    _name, fn, make, cls = case
    ours = gradcheck(fn, make(), max_elements=512)
    expected = torch_verdict(fn, make())
    assert ours.verdict == expected, ours.summary()
    assert expected == ("fail" if cls.__name__.startswith("Wrong") else "pass")  # the cases are what they say
    assert not any(r.code == "cut" for r in ours.reasons), ours.summary()  # a Function's forward is no cut
    if expected == "fail":
        assert ours.suspect is not None, ours.summary()
        assert ours.suspect.name == f"{cls.__name__}Backward" and ours.suspect.custom, ours.summary()
