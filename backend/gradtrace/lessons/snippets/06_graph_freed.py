"""The graph is freed

backward() frees the tensors the graph saved as soon as it has used them. Going through the same
graph a second time works only if the first call kept them with retain_graph=True.

Exercise: The second backward walks a graph the first one freed. Keep it for the second walk.
Goals:
- no hint graph-freed
- x.grad equals the reference
"""
# The first graph is kept and walked twice; the second is freed after its first walk.
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
y.backward(retain_graph=True)
y.backward()            # allowed: the graph was kept, and x.grad adds up to 8
print(x.grad)
z = x * x
z.backward()
z.backward()            # fails: the saved tensors of this graph are gone
