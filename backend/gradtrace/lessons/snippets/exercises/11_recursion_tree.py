# The reduction adds a log term at each call; the leaves start at 0.
import torch

leaves = torch.arange(0.0, 8.0, requires_grad=True)

def reduce(v):
    if v.numel() == 1:
        return v.squeeze()
    half = v.numel() // 2
    return torch.maximum(reduce(v[:half]), reduce(v[half:])) + 0.1 * v.log().mean()

out = reduce(leaves)
out.backward()
print(out.item(), leaves.grad)
