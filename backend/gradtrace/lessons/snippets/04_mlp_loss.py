"""A small network and its loss

Two linear layers and a cross-entropy loss. Every weight and bias is a leaf of the graph, and
each leaf's gradient is what the loss sends back to it.

Exercise: The model's scores go through softmax before CrossEntropyLoss, which applies log-
softmax itself. Give the loss the raw logits.
Goals:
- no hint double-softmax
"""
# Parameters are leaves: backward fills each one's .grad from the loss.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x = torch.randn(3, 4)
target = torch.randint(0, 2, (3,))
loss = nn.CrossEntropyLoss()(model(x), target)
loss.backward()
print(model[0].weight.grad.shape, model[2].bias.grad.shape)
