# create_graph=True records the first derivative's graph, so it can be differentiated.
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x, create_graph=True)
dy.backward()
print(x.grad)  # 18
