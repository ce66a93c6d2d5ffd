# Each step's gradient should be the same as the first one's.
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())
