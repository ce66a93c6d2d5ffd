# A tensor hook that doubles a gradient: the event shows the value before and after.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
y.register_hook(lambda g: g * 2)
x.register_hook(lambda g: g + 1)
y.sum().backward()
print(x.grad)  # (1 * 2) * 3 + 1 = 7
