# Complex tensors carry [real, imag] pairs; integer tensors have no gradient but show values.
import torch

z = torch.tensor([1.0 + 2.0j, 3.0 - 1.0j], requires_grad=True)
n = torch.tensor([1, 2, 3])
loss = (z * z.conj()).real.sum() + n.sum().float() * 0
loss.backward()
print(z.grad, n.dtype)
