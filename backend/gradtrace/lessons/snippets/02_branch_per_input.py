"""A branch per input

Autograd records the operations that actually ran, not the code around them. The same function
takes a different branch for each input, so the two backward passes walk two different graphs.

Exercise: step() should double every input, whatever its sign; for neg it takes the other
branch. Make both calls record the same graph.
Goals:
- neg.grad equals the reference
- same graph as the reference
"""
# Each call records only the branch it took.
import torch


def step(v):
    if v.sum() > 0:
        return v * 2
    return v - 2

pos = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
neg = torch.tensor([-3.0, -2.0, -1.0], requires_grad=True)
step(pos).sum().backward()
step(neg).sum().backward()
print(pos.grad, neg.grad)  # all 2s from the product, all 1s from the subtraction
