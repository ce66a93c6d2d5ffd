"""Double backward

With create_graph=True the backward pass is itself recorded as a graph, so its result can be
differentiated again: the first derivative of x³ is 3x² = 27, the second 6x = 18.

Exercise: The first derivative is taken without recording its graph, so it cannot be
differentiated again. Make x.grad the second derivative, 18.
Goals:
- x.grad equals the reference
"""
# The first backward builds a graph of its own; the second one walks it.
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x, create_graph=True)   # 3x^2 = 27
dy.backward()                                          # 6x = 18
print(dy.item(), x.grad.item())
