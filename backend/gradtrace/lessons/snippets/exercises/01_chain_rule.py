# x.grad should be 2x + 3 = 7, but one path to y is cut.
import torch

x = torch.tensor(2.0, requires_grad=True)
a = x * x
b = 3 * x.detach()
y = a + b + 1
y.backward()
print(x.grad)  # 4: only the product's path counts
