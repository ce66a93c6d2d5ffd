"""The recorder's own ATen ops stay out of a profiler the program runs (NOTE [the recorder's ops
unprofiled] in capture/unprofiled.py); the programs that print a profile's op counts, bare
against recorded, are in faithful_programs.py."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from gradtrace.capture.unprofiled import unprofiled


def _clones(prof: profile) -> int:
    return sum(1 for e in prof.events() if e.name == "aten::clone")


@unprofiled
def _inner(t: torch.Tensor) -> torch.Tensor:
    return t.clone()


@unprofiled
def _outer(t: torch.Tensor) -> torch.Tensor:
    a = _inner(t)  # a wrapped call within another leaves record functions off when it returns
    return a.clone() + _inner(a)


def test_wrapped_ops_are_not_profiled_and_the_program_s_are() -> None:
    t = torch.ones(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _outer(t)
        t.clone()  # the program's own: counted
    assert _clones(prof) == 1


def test_record_functions_are_on_again_after_a_wrapped_call_raises() -> None:
    @unprofiled
    def fails(t: torch.Tensor) -> None:
        t.clone()
        raise ValueError("boom")

    t = torch.ones(3)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with pytest.raises(ValueError, match="boom"):
            fails(t)
        t.clone()
        t.clone()
    assert _clones(prof) == 2


def test_without_a_profiler_the_call_is_plain() -> None:
    assert torch.equal(_outer(torch.ones(2)), torch.full((2,), 2.0))
