# Module paths from the snippet's variable, through a module defined in the snippet.
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.act = nn.GELU()

    def forward(self, v):
        return self.act(self.proj(v)) + v


model = nn.Sequential(Block(), Block())
inp = torch.randn(2, 4)
model(inp).sum().backward()
print(model[1].proj.weight.grad.shape)
