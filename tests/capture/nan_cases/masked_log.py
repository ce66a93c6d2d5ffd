# masked_fill hides log(0) in forward, not in backward.
import torch

p = torch.tensor([0.0, 0.5, 0.25], requires_grad=True)
logp = torch.log(p).masked_fill(p == 0, 0.0)
(p * logp).sum().backward()
