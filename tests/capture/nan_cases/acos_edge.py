# acos at exactly 1: a finite value, an infinite slope, and NaN once multiplied by 0.
import torch

t = torch.tensor([1.0, 0.5], requires_grad=True)
angle = torch.acos(t)
loss = (angle * torch.tensor([0.0, 1.0])).sum()
loss.backward()
