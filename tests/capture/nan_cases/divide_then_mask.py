# The docs' own divide-then-mask (notes/autograd): indexing drops the 0/0 in forward, not in backward.
import torch

x = torch.tensor([1.0, 1.0], requires_grad=True)
div = torch.tensor([0.0, 1.0])
y = (x / div)[div != 0]
y.sum().backward()
