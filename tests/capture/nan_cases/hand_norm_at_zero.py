# A norm written by hand at zero: sqrt's slope is inf there, and the square's backward turns it into 0 x inf.
import torch

w = torch.zeros(3, requires_grad=True)
length = torch.sqrt((w ** 2).sum())
length.backward()
