"""Gradients accumulate

.grad is added to by every backward pass until something clears it. Without a reset each step
sees the sum of all earlier gradients, and training takes the wrong steps.

Exercise: Nothing clears w.grad, so each step sees the sum of all the earlier gradients. Make
each step's gradient equal the first one's.
Goals:
- no hint grad-accumulated
- w.grad equals the reference
"""
# Nothing clears w.grad here, so it keeps growing from step to step.
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())     # bigger every step
    # to fix it: set w.grad = None (or call optimizer.zero_grad()) before each backward
