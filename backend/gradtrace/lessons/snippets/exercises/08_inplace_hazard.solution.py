# An out-of-place add leaves exp's saved result as it was.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()
y = y + 1
y.sum().backward()
print(x.grad)  # exp(x)
