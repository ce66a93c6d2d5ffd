# Both paths reach x: dy/dx = 2x + 3 = 7.
import torch

x = torch.tensor(2.0, requires_grad=True)
a = x * x
b = 3 * x
y = a + b + 1
y.backward()
print(x.grad)  # 7
