# Two backward passes through the same graph.
import torch

x = torch.tensor(2.0, requires_grad=True)
z = x * x
z.backward()
z.backward()
print(x.grad)  # should be 8
