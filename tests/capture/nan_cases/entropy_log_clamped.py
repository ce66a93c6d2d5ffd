# An entropy with the probability clamped to 0 first: log(0) is -inf, and its backward 0 x inf.
import torch

p = torch.tensor([0.0, 0.5, 0.5], requires_grad=True)
entropy = -(p * torch.log(p.clamp(min=0))).sum()
entropy.backward()
