"""detach and no_grad

detach() and torch.no_grad() cut the graph: what they produce has no history, so no gradient
flows back through it. Only y's path reaches x.

Exercise: detach() and no_grad cut two of the three terms off from x. Let every term send its
gradient back.
Goals:
- x.grad equals the reference
"""
# z and s are cut off from x; only the path through y carries a gradient.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * x
z = y.detach()
with torch.no_grad():
    s = x * 10
out = (y + z + s).sum()
out.backward()
print(z.requires_grad, s.requires_grad, x.grad)  # False, False, and 2x
