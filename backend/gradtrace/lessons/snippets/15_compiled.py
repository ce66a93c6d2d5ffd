"""torch.compile

A compiled function reaches autograd as one piece: its whole backward is a single
CompiledFunctionBackward node. The aot_eager backend needs no C++ compiler.

Exercise: The compiled function detaches one factor, so its gradient misses a term of the
product rule. Make it match eager autograd.
Goals:
- x.grad equals the reference
"""
# torch.compile traces f once; autograd then sees one node for all of it.
import torch


def f(x):
    return (torch.sin(x) * x).sum()

x = torch.randn(8, requires_grad=True)
compiled = torch.compile(f, backend="aot_eager")
out = compiled(x)
out.backward()
print(out.grad_fn.name(), x.grad)
