# CrossEntropyLoss takes raw scores (logits).
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x = torch.randn(3, 4)
target = torch.randint(0, 2, (3,))
probs = model(x).softmax(dim=1)
loss = nn.CrossEntropyLoss()(probs, target)
loss.backward()
print(loss.item())
