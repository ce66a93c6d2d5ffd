# Non-finite values stay valid JSON: log(0) is -inf and its gradient 1/0 is inf.
import torch

x = torch.tensor([0.0, 1.0, -1.0], requires_grad=True)
y = torch.log(x)
y.sum().backward()
print(y, x.grad)
