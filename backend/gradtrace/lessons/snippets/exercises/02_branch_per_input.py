# step() should double every input, whatever its sign.
import torch


def step(v):
    if v.sum() > 0:
        return v * 2
    return v - 2

pos = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
neg = torch.tensor([-3.0, -2.0, -1.0], requires_grad=True)
step(pos).sum().backward()
step(neg).sum().backward()
print(pos.grad, neg.grad)
