# Checkpointed blocks keep only their inputs and recompute the rest in backward.
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(4))
x = torch.randn(16, 64, requires_grad=True)
h = x
for block in blocks:
    h = checkpoint(block, h, use_reentrant=False)
h.pow(2).mean().backward()
print(x.grad.norm())
