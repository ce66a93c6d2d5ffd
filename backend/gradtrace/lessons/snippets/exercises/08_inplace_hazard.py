# y should be exp(x) + 1, and backward should work.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
y.add_(1)
y.sum().backward()
print(x.grad)
