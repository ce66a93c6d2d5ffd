"""Custom Functions written the way PyTorch's "Extending PyTorch" notes write them
(docs/source/notes/extending.rst: ``LinearFunction``, ``MulConstant``, ``MyCube``, ``Exp``
saving its output, a Function with ``mark_non_differentiable``), each right and with one
mistake in its backward. Used by ``test_differential.py``: the check must give torch's
verdict on ``gradcheck(Fn.apply, inputs)`` and name the Function on every fail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import Function


class LinearFunction(Function):
    @staticmethod
    def forward(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class WrongLinearFunction(LinearFunction):
    """Forgets to sum the bias's gradient over the batch (takes the first row)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        input, weight, _bias = ctx.saved_tensors
        return grad_output.mm(weight), grad_output.t().mm(input), grad_output[0]


class MulConstant(Function):
    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, constant: float) -> torch.Tensor:
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        return grad_output * ctx.constant, None


class WrongMulConstant(MulConstant):
    """Returns the gradient unscaled."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        return grad_output, None


class MyCube(Function):
    @staticmethod
    def forward(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dx = 3 * x ** 2
        return x ** 3, dx

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        x, = inputs
        _result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor, grad_dx: torch.Tensor) -> torch.Tensor:
        x, dx = ctx.saved_tensors
        return grad_output * dx + grad_dx * 6 * x


class WrongMyCube(MyCube):
    """Forgets the second output's term (6x)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor, grad_dx: torch.Tensor) -> torch.Tensor:
        _x, dx = ctx.saved_tensors
        return grad_output * dx


class Exp(Function):
    @staticmethod
    def forward(ctx: Any, i: torch.Tensor) -> torch.Tensor:
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        result, = ctx.saved_tensors
        return grad_output * result


class WrongExp(Exp):
    """Differentiates as if the result were the input (``grad * exp`` of the saved result again)."""

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> torch.Tensor:
        result, = ctx.saved_tensors
        return grad_output * result.exp()


class SortValues(Function):
    """``mark_non_differentiable`` on the indices, ``ctx.set_materialize_grads`` as the notes show."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return values, idx

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor, _g_idx: torch.Tensor | None) -> torch.Tensor:
        idx, = ctx.saved_tensors
        out = torch.zeros_like(g)
        out.scatter_(-1, idx, g)
        return out


class WrongSortValues(SortValues):
    """Sends the gradient back in sorted order (forgets to scatter it)."""

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor, _g_idx: torch.Tensor | None) -> torch.Tensor:
        return g.clone()


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).requires_grad_()


Case = tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]], type]
CASES: list[Case] = [
    ("linear", LinearFunction.apply, lambda: (_x(4, 3), _x(2, 3, seed=1), _x(2, seed=2)), LinearFunction),
    ("linear-wrong-bias", WrongLinearFunction.apply, lambda: (_x(4, 3), _x(2, 3, seed=1), _x(2, seed=2)),
     WrongLinearFunction),
    ("mul-constant", MulConstant.apply, lambda: (_x(5), 2.5), MulConstant),
    ("mul-constant-unscaled", WrongMulConstant.apply, lambda: (_x(5), 2.5), WrongMulConstant),
    ("my-cube", MyCube.apply, lambda: (_x(3),), MyCube),
    ("my-cube-wrong", WrongMyCube.apply, lambda: (_x(3),), WrongMyCube),
    ("exp", Exp.apply, lambda: (_x(2, 2),), Exp),
    ("exp-wrong", WrongExp.apply, lambda: (_x(2, 2),), WrongExp),
    ("sort", SortValues.apply, lambda: (_x(2, 4),), SortValues),
    ("sort-wrong", WrongSortValues.apply, lambda: (_x(2, 4),), WrongSortValues),
]
