# Every term of out should send its gradient back to x.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * x
z = y.detach()
with torch.no_grad():
    s = x * 10
out = (y + z + s).sum()
out.backward()
print(x.grad)  # only 2x
