# x.grad should end up as the second derivative of x³, 6x = 18.
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x)
dy.backward()
print(x.grad)
