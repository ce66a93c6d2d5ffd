# h asks to keep its gradient before backward runs.
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
h = w * 3
h.retain_grad()
out = (h ** 2).sum()
out.backward()
print(w.grad, h.grad)
