# An empty tensor in the graph, and broadcasting whose backward reduces the gradient.
import torch

e = torch.zeros(0, 3, requires_grad=True)
w = torch.ones(3, requires_grad=True)
m = torch.ones(4, 3)
out = (m * w).sum() + (e * w).sum()
out.backward()
print(w.grad, e.grad.shape)
