# Four blocks; every activation is saved for backward.
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(4))
x = torch.randn(16, 64, requires_grad=True)
h = x
for block in blocks:
    h = block(h)
h.pow(2).mean().backward()
print(x.grad.norm())
