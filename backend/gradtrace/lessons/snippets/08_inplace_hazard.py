"""An in-place hazard

exp() keeps its output for the backward pass. Changing that output in place afterwards bumps
its version counter, and backward refuses to use a tensor that changed since it was saved.

Exercise: add_ changes the result exp() saved for backward, and backward refuses it. Add out of
place.
Goals:
- x.grad equals the reference
"""
# The saved output of exp() is changed in place, so backward stops with an error.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()          # exp saves its result for backward
y.add_(1)            # this changes that saved result in place
y.sum().backward()   # RuntimeError: modified by an inplace operation
