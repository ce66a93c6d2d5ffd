# A snippet that raises keeps everything recorded up to the error.
import torch

x = torch.ones(2, requires_grad=True)
y = (x * 2).sum()
y.backward()
def fail():
    raise ValueError("bad input: expected a positive number, got -1")
fail()
