"""PyTorch's own operator database (``torch.testing._internal.common_methods_invocations.op_db``,
which ships in the wheel) as a differential test of recording and of Explain: the first three
sample inputs of every operator that supports autograd in float64, each called and backpropagated
in process under ``gradtrace.record()``. Each records with no error and no recorder error, and
every rule of Explain's catalogue that applies equals the engine's gradient element by element
(``test_explain._checked``). It found addmm's rule ignoring ``alpha`` and ``beta``, and the
normalizations' rules answering a number where the program used their mean or rstd outputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from analysis.test_module_db import backward_of, differential


def _fresh(sample: Any) -> None:
    """No ``.grad`` left from an earlier call on the sample's leaves (torch would accumulate into it)."""
    for t in [sample.input, *sample.args, *sample.kwargs.values()]:
        if isinstance(t, torch.Tensor) and t.is_leaf:
            t.grad = None


def _operator_cases() -> Iterator[tuple[str, Callable[[], None]]]:
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if not op.supports_autograd or torch.float64 not in op.supported_dtypes("cpu"):
            continue
        try:
            samples = list(op.sample_inputs("cpu", torch.float64, requires_grad=True))[:3]
        except Exception:  # a sample generator this build cannot run
            continue
        for s in samples:
            def run(op: Any = op, s: Any = s) -> None:
                backward_of(op(s.input, *s.args, **s.kwargs))
            try:  # the operator refuses its own sample without gradtrace: not ours to judge
                run()
            except Exception:
                continue
            _fresh(s)
            yield op.name, run


@pytest.mark.slow
def test_every_operator_records_cleanly_and_explain_agrees_with_the_engine() -> None:
    recorded, checked = differential(_operator_cases(), no_rule=None)  # op_db has many ops without a rule
    assert recorded >= 1000, recorded
    assert checked >= 4000, checked
