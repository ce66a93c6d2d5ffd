# A softmax written by hand, its sum large but finite: the smallest probability underflows to a
# float32 subnormal, log's backward 1 / p overflows to inf there, and division's backward turns
# that inf into NaN. Nothing is zero: the cause is the infinity division received.
import torch

z = torch.tensor([0.0, 48.0, -45.0], requires_grad=True)
y = torch.exp(z)
p = y / y.sum()
loss = -torch.log(p).mean()
loss.backward()
