# Tensors past 1,000 elements carry stats only.
import torch

w = torch.randn(40, 40, requires_grad=True)
loss = (w @ w).tanh().mean()
loss.backward()
print(w.grad.shape)
