"""Checking a gradient numerically

A central finite difference estimates the derivative without autograd. It should agree with
x.grad to many digits in float64; torch.autograd.gradcheck runs the same comparison for you.

Exercise: Cube's backward forgets a factor. Fix it until the numerical gradient check passes.
Goals:
- gradient check passes on Cube
- x.grad equals the reference
"""
# Autograd's answer next to a numerical estimate, then gradcheck.
import torch


def f(t):
    return torch.sin(t) * t ** 2

x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
f(x).backward()
eps = 1e-6
numeric = (f(x.detach() + eps) - f(x.detach() - eps)) / (2 * eps)
print(x.grad.item(), numeric.item())
print(torch.autograd.gradcheck(f, (x,)))
