# Nothing is cut: x.grad = 2x + 2x + 10.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * x
z = y
s = x * 10
out = (y + z + s).sum()
out.backward()
print(x.grad)  # [14, 18]
