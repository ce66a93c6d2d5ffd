# d(x³)/dx = 3x²: the backward multiplies by 3.
import torch


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2

x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
Cube.apply(x).sum().backward()
print(x.grad)  # 3x²
