"""PyTorch's own module database (``torch.testing._internal.common_modules.module_db``, which
ships in the wheel) as a differential test of recording and of Explain: every module's sample
inputs, in float64, recorded in process through one forward and one backward. Each records with
no error and no recorder error, and wherever Explain's catalogue has a rule for a backward node,
the rule's gradient equals, element by element, the one the engine passed on
(``test_explain._checked``: torch's own answer, not a hand-written one)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

import gradtrace
from analysis.test_explain import CATALOGUE, _checked

NO_RULE = {
    "TrilinearBackward0": "nn.Bilinear's fused trilinear product",
    "CopySlices": "circular padding's in-place slice copies (an in-place write into a view)",
}
"""Backward nodes the module database makes that Explain's catalogue has no rule for, and what
they are: the test fails when a new one appears (a module that gained an op)."""


def _samples() -> list[tuple[str, Any, Any]]:
    from torch.testing._internal.common_modules import module_db

    out = []
    for info in module_db:
        try:
            inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=True,
                                             training=True)
        except Exception:
            continue
        out += [(info.module_cls.__name__, info.module_cls, mi) for mi in inputs[:2]]
    return out


def _run(cls: Any, mi: Any) -> bool:
    """One forward and one backward of the module on its sample; False where the module itself
    refuses the sample (the database's error inputs), before anything is recorded."""
    torch.manual_seed(0)
    try:
        m = cls(*mi.constructor_input.args, **mi.constructor_input.kwargs).to(dtype=torch.float64)
        m(*mi.forward_input.args, **mi.forward_input.kwargs)
    except Exception:
        return False
    return True


def recorded_and_checked(run: Any, name: str, problems: list[tuple[str, str]], unruled: dict[str, str]) -> int:
    """Record ``run()`` (one forward and backward) in process; note a failed or troubled
    recording in ``problems`` and each backward node with no rule in ``unruled``; answer how many
    of Explain's rules agreed with the engine's gradients (``test_explain._checked``)."""
    with gradtrace.record(tensor_budget=None) as rec:
        run()
    doc = rec.document().model_dump(mode="json", by_alias=True)
    if doc["status"] != "ok" or doc.get("recorder_errors"):
        problems.append((name, str(doc.get("error") or doc.get("recorder_errors"))[:300]))
        return 0
    checked = 0
    try:
        checked = sum(_checked(doc).values())
    except AssertionError as e:
        problems.append((name, f"Explain disagrees with the engine: {str(e)[:300]}"))
    for node in doc["graph"]["nodes"]:
        if node["kind"] == "function" and node["name"] not in CATALOGUE:
            unruled.setdefault(node["name"], name)
    return checked


def backward_of(out: Any) -> None:
    """Backward from the sum of every floating-point output that requires grad."""
    outs = [o for o in (out if isinstance(out, tuple | list) else [out])
            if isinstance(o, torch.Tensor) and o.requires_grad and o.is_floating_point()]
    if outs:
        sum(o.sum() for o in outs).backward()


def differential(cases: Iterator[tuple[str, Callable[[], None]]],
                 no_rule: dict[str, str] | None = NO_RULE) -> tuple[int, int]:
    """Each case (a name, and a forward and backward that ran bare) recorded and checked, with
    float64 the default dtype while the cases are made and run; fails on any problem, and on a
    backward node with no rule that ``no_rule`` does not list (None: any may have none);
    returns how many were recorded and how many rules agreed with the engine."""
    problems: list[tuple[str, str]] = []
    unruled: dict[str, str] = {}
    recorded = checked = 0
    was = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the modules' and operators' own deprecation warnings
            for name, run in cases:
                checked += recorded_and_checked(run, name, problems, unruled)
                recorded += 1
    finally:
        torch.set_default_dtype(was)
    assert not problems, problems
    if no_rule is not None:
        assert set(unruled) <= set(no_rule), {op: unruled[op] for op in set(unruled) - set(no_rule)}
    return recorded, checked


def _module_cases() -> Iterator[tuple[str, Callable[[], None]]]:
    for name, cls, mi in _samples():
        if not _run(cls, mi):
            continue
        torch.manual_seed(0)
        m = cls(*mi.constructor_input.args, **mi.constructor_input.kwargs).to(dtype=torch.float64)
        yield name, lambda m=m, mi=mi: backward_of(m(*mi.forward_input.args, **mi.forward_input.kwargs))


def test_every_module_records_cleanly_and_explain_agrees_with_the_engine() -> None:
    recorded, checked = differential(_module_cases())
    assert recorded >= 200, recorded  # the database's samples did run
    assert checked >= 500, checked  # and Explain's rules were held to the engine's gradients
