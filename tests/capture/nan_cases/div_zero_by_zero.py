# A ratio whose denominator is zero makes NaN in backward, through a few layers after it.
import torch

a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([0.0, 1.0], requires_grad=True)
r = (a - 1.0) / b
out = torch.tanh(r.nan_to_num(0.0)).sum() * 3
out.backward()
