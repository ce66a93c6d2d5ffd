# Views and slice assignment: view nodes, CopySlices, and an in-place op on a non-leaf.
import torch

a = torch.arange(6.0, requires_grad=True)
b = a * 1.0
v = b.view(2, 3)
t = v.t()
b[1:3] = torch.tensor([10.0, 20.0])
c = t.sum() + b.sum()
c.backward()
print(a.grad)
