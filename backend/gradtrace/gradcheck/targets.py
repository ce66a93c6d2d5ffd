"""What a check checks: the tensors a :class:`~gradtrace.schema.gradcheck.TargetSpec` names in
one execution of the program (NOTE [how a re-run finds the same tensor] in ``probe.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from gradtrace.gradcheck.probe import Probe
from gradtrace.gradcheck.programs import Program
from gradtrace.schema.gradcheck import TargetSpec


class TargetError(ValueError):
    """The requested target does not exist in the program (the API answers 422)."""


@dataclass
class Target:
    name: str
    kind: str  # "leaf" or "arg"
    key: object
    tensor: torch.Tensor


def resolve(program: Program, probe: Probe, spec: TargetSpec | None) -> list[Target]:
    """The tensors a spec names in this execution (all leaves when ``spec`` is None)."""
    names = program.names(probe)
    leaves = [Target(names.get(i, f"leaf {i}"), "leaf", i, t) for i, t in enumerate(probe.leaves)]
    if spec is None:
        return leaves
    if spec.kind == "leaf":
        found = [t for t in leaves if t.name == spec.name]
        if not found:
            known = ", ".join(t.name for t in leaves if not t.name.startswith("leaf ")) or "none"
            raise TargetError(f"no leaf named {spec.name!r} reaches backward pass {probe.pass_index}; "
                              f"leaves: {known}")
        return found[:1]
    if spec.kind == "parameters":
        found = [t for t in leaves if isinstance(t.tensor, nn.Parameter)]
        if not found:
            raise TargetError(f"the program uses no parameter (nn.Parameter) in backward pass {probe.pass_index}")
        return found
    want = (spec.name or "").removesuffix("Backward")
    calls = [s for s in probe.sites if s.custom and s.name.removesuffix("Backward") == want and s.pos == 0]
    if spec.occurrence >= len(calls):
        raise TargetError(f"the custom Function {want!r} is called {len(calls)} time(s) before backward pass "
                          f"{probe.pass_index} (since the pass before it); call {spec.occurrence} does not exist")
    site = calls[spec.occurrence]
    if not site.inputs:
        raise TargetError(f"no input of {want} requires grad")
    ordinal = {id(t): i for i, t in enumerate(probe.leaves)}
    return [Target(names.get(ordinal.get(id(t), -1), f"{want} input {pos}"), "arg", (site.call, pos), t)
            for pos, t in site.inputs]
