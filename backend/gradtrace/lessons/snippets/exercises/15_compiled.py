# The compiled f should have the same gradient as the eager one: sin(x) + x cos(x).
import torch


def f(x):
    return (torch.sin(x) * x.detach()).sum()

x = torch.randn(8, requires_grad=True)
compiled = torch.compile(f, backend="aot_eager")
out = compiled(x)
out.backward()
print(x.grad)
