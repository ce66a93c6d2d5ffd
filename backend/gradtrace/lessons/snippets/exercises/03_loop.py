# Five doublings should give x.grad = 32.
import torch

x = torch.tensor(1.0, requires_grad=True)
y = x
for _ in range(4):
    y = y * 2
y.backward()
print(x.grad)
