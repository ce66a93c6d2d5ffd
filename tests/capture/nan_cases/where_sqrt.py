# torch.where picks 0 where x <= 0, yet sqrt's backward still runs there.
import torch

x = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
y = torch.where(x > 0, x.sqrt(), 0.0)
y.sum().backward()
