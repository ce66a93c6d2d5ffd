# We want h's gradient too, but h is not a leaf.
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
h = w * 3
out = (h ** 2).sum()
out.backward()
print(w.grad, h.grad)  # h.grad is None
