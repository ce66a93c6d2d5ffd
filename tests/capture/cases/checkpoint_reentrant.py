# Reentrant checkpointing: one CheckpointFunctionBackward node, and a backward inside backward.
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

lin = nn.Linear(3, 3)
x = torch.ones(2, 3, requires_grad=True)
h = checkpoint(lin, x, use_reentrant=True)
h.sum().backward()
print(x.grad.shape)
