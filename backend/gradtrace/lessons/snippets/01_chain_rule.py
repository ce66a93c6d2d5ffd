"""The chain rule

y = x² + 3x + 1 at x = 2. Two paths lead from x to y, and backward adds what flows along each:
2x from the product and 3 from the scaled copy, so x.grad = 2·2 + 3 = 7.

Exercise: The starting code cuts one of the two paths with detach(), so x.grad is 4. Make both
paths count again.
Goals:
- x.grad equals the reference
- same graph as the reference
"""
# One number, two paths to the output: dy/dx = 2x + 3, which is 7 at x = 2.
import torch

x = torch.tensor(2.0, requires_grad=True)
a = x * x
b = 3 * x
y = a + b + 1
y.backward()
print(y.grad_fn, x.grad)  # an AddBackward0 node, and 7
