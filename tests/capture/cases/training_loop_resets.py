# A short Adam loop that clears .grad each step, then every other way of clearing it.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x = torch.randn(5, 3)
target = torch.randn(5, 1)
for _ in range(3):
    opt.zero_grad()
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    opt.step()
w = torch.tensor([1.0, -2.0], requires_grad=True)
(w * w).sum().backward()
w.grad = None
(w * 3).sum().backward()
w.grad.zero_()
(w ** 3).sum().backward()
model.zero_grad(set_to_none=False)
model(x).sum().backward()
