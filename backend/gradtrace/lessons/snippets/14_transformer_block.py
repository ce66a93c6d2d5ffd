"""A transformer encoder

A bigger graph: two encoder layers with attention and feed-forward blocks, hundreds of nodes in
nested modules. The layer at work at the current step is open; the other is folded into one box,
which opens on a click. Pick a layer above the graph and the timeline goes there.

Exercise: The training loop computes gradients but never takes a step, so the loss stays where
it began. Make it go down.
Goals:
- loss below 0.97
- no hint grad-accumulated
"""
# Two encoder layers on a short batch of sequences.
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
tokens = torch.randn(2, 16, 64)
loss = encoder(tokens).pow(2).mean()
loss.backward()
print(loss.item())
