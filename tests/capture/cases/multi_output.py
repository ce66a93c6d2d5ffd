# Nodes with several outputs: max returns values and indices, unbind returns one view per row.
import torch

x = torch.tensor([[1.0, 5.0, 2.0], [4.0, 0.5, 3.0]], requires_grad=True)
values, indices = x.max(dim=1)
first, second = x.unbind(0)
loss = values.sum() + (first * second).sum()
loss.backward()
print(indices.tolist(), x.grad)
