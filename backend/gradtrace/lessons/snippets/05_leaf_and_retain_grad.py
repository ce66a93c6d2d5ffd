"""Leaves and retain_grad

Only leaf tensors keep their gradient in .grad. An intermediate result keeps one only when it
asks for it with retain_grad() before backward runs.

Exercise: The code reads h.grad, but h is not a leaf and gets no .grad. Make h keep its
gradient.
Goals:
- no hint nonleaf-grad
"""
# w is a leaf; h is computed from it and keeps a gradient only because it asked to.
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
h = w * 3
h.retain_grad()
out = (h ** 2).sum()
out.backward()
print(w.is_leaf, h.is_leaf, w.grad, h.grad)
