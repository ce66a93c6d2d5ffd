# Nothing detached: the compiled backward has both terms of the product rule.
import torch


def f(x):
    return (torch.sin(x) * x).sum()

x = torch.randn(8, requires_grad=True)
compiled = torch.compile(f, backend="aot_eager")
out = compiled(x)
out.backward()
print(x.grad)
