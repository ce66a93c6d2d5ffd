# Sparse gradients: nn.Embedding(sparse=True), small (dense values shown) and large (stats).
import torch
from torch import nn

torch.manual_seed(0)
small = nn.Embedding(6, 2, sparse=True)
large = nn.Embedding(3000, 4, sparse=True)
idx = torch.tensor([1, 4, 4])
loss = small(idx).sum() + large(idx).pow(2).sum()
loss.backward()
