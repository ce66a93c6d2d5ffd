# w.grad is cleared before each backward, so every step sees its own gradient.
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    w.grad = None
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())  # -8 every step
