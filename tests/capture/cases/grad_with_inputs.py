# autograd.grad computes only what it is asked: no AccumulateGrad runs, .grad stays None.
import torch

a = torch.tensor(1.5, requires_grad=True)
b = torch.tensor(-2.0, requires_grad=True)
y = a * b + a.exp()
(ga,) = torch.autograd.grad(y, [a], retain_graph=True)
torch.autograd.backward([y], inputs=[b])
print(ga, a.grad, b.grad)
