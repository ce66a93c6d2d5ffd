"""The real programs a person judges gradtrace by (the README's screenshots show them): a GRU
cell unrolled 200 steps, a 20-step Adam training loop, a 6-layer transformer encoder. The page's
readability, playback and words tests all run these same three."""

GRU_200 = """import torch
from torch import nn
cell = nn.GRUCell(8, 16)
h = torch.zeros(1, 16)
xs = torch.randn(200, 1, 8)
for t in range(200):
    h = cell(xs[t], h)
h.sum().backward()
"""

ADAM_20 = """import torch
from torch import nn
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), 1e-2)
x = torch.randn(32, 4)
y = torch.randn(32, 1)
for step in range(20):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""

TRANSFORMER_6 = """import torch
from torch import nn
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 6)
x = torch.randn(2, 5, 32)
enc(x).sum().backward()
"""
