"""Functions with a known right or wrong backward: the check's own fixtures.

Each is ``(name, fn, make_inputs, expected verdict)``; ``make_inputs`` gives fresh float64
inputs (the same values every call). The wrong ones are the mistakes people make when they
write a backward by hand: a factor of 2, a missing factor, a transposed matrix, swapped inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def _t(values: Any, **kw: Any) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64, requires_grad=True, **kw)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


class WrongCube(Cube):
    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:  # forgets the factor 3
        (x,) = ctx.saved_tensors
        return grad * x ** 2


class Sin(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class DoubledSin(Sin):
    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:  # ×2
        (x,) = ctx.saved_tensors
        return 2 * grad * x.cos()


class MatVec(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(w, v)
        return w @ v

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w, v = ctx.saved_tensors
        return torch.outer(grad, v), w.T @ grad


class TransposedMatVec(MatVec):
    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w, v = ctx.saved_tensors
        return torch.outer(grad, v), w @ grad  # the matrix not transposed


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad * b, grad * a


class SwappedMul(Mul):
    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad * a, grad * b  # each input gets its own value instead of the other's


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return grad * y


class LogExp(Exp):
    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:  # d/dx of log instead of exp
        (y,) = ctx.saved_tensors
        return grad / y


def _mlp(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return (torch.tanh(x @ w1 + b1) @ w2).pow(2).mean()


def _seeded_noise(x: torch.Tensor) -> torch.Tensor:
    gen = torch.Generator().manual_seed(7)
    noise = torch.randn(x.shape, generator=gen, dtype=x.dtype)
    return (x * noise + x.sin()).sum()


Fixture = tuple[str, Callable[..., Any], Callable[[], tuple[torch.Tensor, ...]], str]

FIXTURES: list[Fixture] = [
    ("cube wrong (missing factor 3)", lambda x: WrongCube.apply(x).sum(), lambda: (_t([1.0, 2.0]),), "fail"),
    ("cube right", lambda x: Cube.apply(x).sum(), lambda: (_t([1.0, 2.0]),), "pass"),
    ("sin wrong (x2)", lambda x: DoubledSin.apply(x).sum(), lambda: (_randn(5),), "fail"),
    ("sin right", lambda x: Sin.apply(x).sum(), lambda: (_randn(5),), "pass"),
    ("matvec wrong (transposed)", lambda w, v: TransposedMatVec.apply(w, v),
     lambda: (_randn(3, 3), _randn(3, seed=1)), "fail"),
    ("matvec right", lambda w, v: MatVec.apply(w, v), lambda: (_randn(3, 3), _randn(3, seed=1)), "pass"),
    ("mul wrong (swapped)", lambda a, b: SwappedMul.apply(a, b).sum(),
     lambda: (_randn(4), _randn(4, seed=1)), "fail"),
    ("mul right", lambda a, b: Mul.apply(a, b).sum(), lambda: (_randn(4), _randn(4, seed=1)), "pass"),
    ("exp wrong (log's derivative)", lambda x: LogExp.apply(x).sum(), lambda: (_randn(4),), "fail"),
    ("exp right", lambda x: Exp.apply(x).sum(), lambda: (_randn(4),), "pass"),
    ("cube wrong inside a chain", lambda x: WrongCube.apply(x.sin()).exp().sum(), lambda: (_randn(3),), "fail"),
    ("cube right inside a chain", lambda x: Cube.apply(x.sin()).exp().sum(), lambda: (_randn(3),), "pass"),
    ("relu away from 0", lambda x: torch.relu(x).pow(2).sum(), lambda: (_t([-1.0, 0.5, 2.0]),), "pass"),
    ("abs at 0 (both sides 0 on average)", lambda x: x.abs().sum() * 0 + x.pow(2).sum(),
     lambda: (_t([0.0, 1.0]),), "pass"),
    ("tanh mlp", _mlp, lambda: (_randn(5, 4), _randn(4, 6, seed=1), _randn(6, seed=2), _randn(6, 2, seed=3)), "pass"),
    ("softmax cross entropy", lambda z: torch.nn.functional.cross_entropy(z, torch.tensor([0, 2, 1])),
     lambda: (_randn(3, 4),), "pass"),
    ("seeded randomness", _seeded_noise, lambda: (_randn(6),), "pass"),
    ("vector output (outer product)", lambda a, b: torch.outer(a, b), lambda: (_randn(3), _randn(4, seed=1)), "pass"),
    ("tuple output", lambda x: (x.sin(), x.cos() * 2), lambda: (_randn(4),), "pass"),
    ("large output (projected)", lambda a, b: a[:, None] * b[None, :] + a.sin()[:, None],
     lambda: (_randn(30), _randn(30, seed=1)), "pass"),
    ("max without ties", lambda x: x.max() + x.norm(), lambda: (_t([1.0, 3.0, 2.0]),), "pass"),
    ("cumprod", lambda x: x.cumprod(0).sum(), lambda: (_randn(6),), "pass"),
    ("large sampled tensor", lambda x: (x.sin() * x).sum(), lambda: (_randn(2000),), "pass"),
    ("custom x2 on a matrix", lambda x: DoubledSin.apply(x).pow(2).sum(), lambda: (_randn(3, 3),), "fail"),
]
