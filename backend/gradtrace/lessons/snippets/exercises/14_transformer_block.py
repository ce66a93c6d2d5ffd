# Three training steps of one encoder layer; the loss should go down.
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
tokens = torch.randn(2, 8, 32)
opt = torch.optim.SGD(layer.parameters(), lr=0.2)
for step in range(3):
    opt.zero_grad()
    loss = layer(tokens).pow(2).mean()
    loss.backward()
print(loss.item())
