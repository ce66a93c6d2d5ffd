# A shape error in the last layer of a Sequential: the error names the module, op and shapes.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(5, 2))
out = model(torch.randn(3, 4))
