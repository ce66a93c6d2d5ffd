# A custom autograd.Function: its node is the ctx, with the tensors it saved.
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return v ** 3

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad * 3 * v ** 2

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(x)
y.sum().backward()
print(x.grad)
