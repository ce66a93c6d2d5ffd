# The first backward keeps the graph, so the second can walk it too.
import torch

x = torch.tensor(2.0, requires_grad=True)
z = x * x
z.backward(retain_graph=True)
z.backward()
print(x.grad)  # 8
