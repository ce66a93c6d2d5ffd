"""The Cube snippets: ``x ** 3`` as a custom autograd.Function, with a backward that forgets
the factor 3 (the mistake the gradient check exists for), with a wrong factor 2, and with the
right one. Every test that needs a custom Function takes it from here."""

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


'''

ON_TWO = '''x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(x).sum()
y.backward()
print(x.grad)
'''
"""Cube of ``[1, 2]``, summed: the right gradient is ``[3, 12]``."""

IN_A_CHAIN = '''w = torch.tensor([1.0, 2.0, -0.5], requires_grad=True)
a = w * 2 + 1
y = Cube.apply(a)
y.sin().sum().backward()
'''
"""Cube between ordinary ops: a comparison's first divergence is the Cube node, in the backward."""

WRONG_FACTOR = "grad * 2 * x ** 2"
RIGHT_FACTOR = "grad * 3 * x ** 2"


def cube(factor: str, tail: str) -> str:
    """The Cube Function whose backward multiplies by ``factor`` (``""``, ``"2 * "``,
    ``"3 * "``), then ``tail``: the statements that use it."""
    return _CUBE.format(factor=factor) + tail


WRONG_CUBE = cube("", ON_TWO)
RIGHT_CUBE = cube("3 * ", ON_TWO)
