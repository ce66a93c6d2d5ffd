# A GRUCell unrolled over a short sequence: one module call per step.
import torch
from torch import nn

torch.manual_seed(0)
cell = nn.GRUCell(2, 3)
xs = torch.randn(6, 1, 2)
h = torch.zeros(1, 3)
for x in xs:
    h = cell(x, h)
h.pow(2).sum().backward()
