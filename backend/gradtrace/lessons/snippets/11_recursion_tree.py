"""Recursion builds a tree

A recursive reduction halves its input at each call. The graph it leaves behind has the shape of
the call tree, something a graph fixed before the run could not express.

Exercise: log(0) at the first leaf makes an infinity that backward turns into NaN. Keep every
value finite.
Goals:
- no non-finite value
"""
# Each call splits the tensor in two and combines the halves: the graph branches like the calls.
import torch

leaves = torch.arange(1.0, 9.0, requires_grad=True)

def reduce(v):
    if v.numel() == 1:
        return v.squeeze()
    half = v.numel() // 2
    return torch.maximum(reduce(v[:half]), reduce(v[half:])) + 0.1 * v.mean()

out = reduce(leaves)
out.backward()
print(out.item(), leaves.grad)
