"""The Cube snippets: ``x ** 3`` as a custom autograd.Function, with a backward that forgets
the factor 3 (the mistake the gradient check exists for) and with the right one."""

from __future__ import annotations

_CUBE = '''import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * {factor}x ** 2


x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(x).sum()
y.backward()
print(x.grad)
'''

WRONG_CUBE = _CUBE.format(factor="")
RIGHT_CUBE = _CUBE.format(factor="3 * ")
