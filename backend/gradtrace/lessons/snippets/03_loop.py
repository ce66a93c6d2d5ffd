"""A loop unrolls

A Python loop leaves one node per turn in the graph. Five doublings make a chain of five
MulBackward0 nodes, and the gradient that comes back is 2⁵ = 32.

Exercise: The loop stops one doubling short, so x.grad is 16. Unroll it five times.
Goals:
- x.grad equals the reference
- same graph as the reference
"""
# The loop runs five times, so the graph holds five multiplications in a row.
import torch

x = torch.tensor(1.0, requires_grad=True)
y = x
for _ in range(5):
    y = y * 2
y.backward()
print(x.grad)  # 32
