"""Each local derivative (``analysis/local_derivatives.py``) is torch's own: the gradient autograd
sends back through the op, in float64, at points inside and at the edges of its domain (where
IEEE arithmetic gives an infinity or NaN and Python's math would raise)."""

from __future__ import annotations

import math

import pytest
import torch

from gradtrace.analysis.local_derivatives import LOCAL_DERIVATIVES, local_derivative

FORWARD = {
    "SqrtBackward0": torch.sqrt, "RsqrtBackward0": torch.rsqrt, "LogBackward0": torch.log,
    "Log2Backward0": torch.log2, "Log10Backward0": torch.log10, "Log1PBackward0": torch.log1p,
    "ReciprocalBackward0": torch.reciprocal, "ExpBackward0": torch.exp, "Exp2Backward0": torch.exp2,
    "Expm1Backward0": torch.expm1, "SinBackward0": torch.sin, "CosBackward0": torch.cos,
    "TanhBackward0": torch.tanh, "SigmoidBackward0": torch.sigmoid, "AsinBackward0": torch.asin,
    "AcosBackward0": torch.acos, "AtanhBackward0": torch.atanh, "AcoshBackward0": torch.acosh,
    "AbsBackward0": torch.abs, "NegBackward0": torch.neg,
    "SiluBackward0": torch.nn.functional.silu, "LogSigmoidBackward0": torch.nn.functional.logsigmoid,
    "MishBackward0": torch.nn.functional.mish, "HardswishBackward0": torch.nn.functional.hardswish,
}
POINTS = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 30.0, 800.0)


def test_every_local_derivative_has_its_forward_op_here() -> None:
    assert set(FORWARD) == set(LOCAL_DERIVATIVES)


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_the_local_derivative_is_torchs(name: str) -> None:
    for x in POINTS:
        t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        (want,) = torch.autograd.grad(FORWARD[name](t), t)
        expected, got = want.item(), local_derivative(name, x)
        assert got is not None
        if math.isnan(expected) or math.isinf(expected):
            assert (math.isnan(got) and math.isnan(expected)) or got == expected, (name, x, got, expected)
        else:
            assert got == pytest.approx(expected, rel=1e-9, abs=1e-300), (name, x, got, expected)


def test_nan_in_gives_nan_and_an_unknown_op_gives_none() -> None:
    assert math.isnan(local_derivative("ExpBackward0", math.nan) or 0.0)
    assert local_derivative("MmBackward0", 1.0) is None
