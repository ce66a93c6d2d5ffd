/**
 * The lesson gallery: fifteen short snippets, each with a one-line explanation of what the
 * graph will show. `torch`, `nn` and `F` are predefined by the service, but every snippet
 * imports what it uses so it also runs as a plain script.
 */
export const EXAMPLES = [
  { id: "chain-rule", title: "Chain rule", blurb: "y = x² + 3x + 1: the gradient at x = 2 is 2x + 3 = 7, summed over both paths from x.",
    code: `# The chain rule on one number: y = x^2 + 3x + 1, so dy/dx = 2x + 3 = 7 at x = 2.
import torch

x = torch.tensor(2.0, requires_grad=True)
a = x * x
b = 3 * x
y = a + b + 1
y.backward()
print(y.grad_fn, x.grad)
` },
  { id: "branch", title: "A branch per input", blurb: "The graph records the path that actually ran: two inputs, two different graphs.",
    code: `# Autograd records what ran, not the code: each input takes a different branch.
import torch

def step(v):
    if v.sum() > 0:
        return v * 2
    return v - 2

pos = torch.tensor([1.0, -1.0, 2.0], requires_grad=True)
neg = torch.tensor([-3.0, -2.0, -1.0], requires_grad=True)
step(pos).sum().backward()
step(neg).sum().backward()
print(pos.grad, neg.grad)
` },
  { id: "loop", title: "A loop unrolls", blurb: "Each turn of a Python loop adds a node: five doublings give a gradient of 2⁵ = 32.",
    code: `# A Python loop becomes a chain of nodes: five doublings, so dy/dx = 2**5.
import torch

x = torch.tensor(1.0, requires_grad=True)
y = x
for _ in range(5):
    y = y * 2
y.backward()
print(x.grad)
` },
  { id: "mlp", title: "MLP and a loss", blurb: "A small network: every weight and bias is a leaf whose gradient comes from the loss.",
    code: `# A two-layer network and a cross-entropy loss: every parameter is a leaf of the graph.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
x = torch.randn(3, 4)
target = torch.randint(0, 2, (3,))
loss = nn.CrossEntropyLoss()(model(x), target)
loss.backward()
print(model[0].weight.grad.shape, model[2].bias.grad.shape)
` },
  { id: "retain-grad", title: "Leaves and retain_grad", blurb: "Only leaves keep .grad, unless an intermediate asks for it with retain_grad().",
    code: `# Leaves keep their .grad; an intermediate tensor keeps one only after retain_grad().
import torch

w = torch.tensor([1.0, 2.0], requires_grad=True)
h = w * 3
h.retain_grad()
out = (h ** 2).sum()
out.backward()
print(w.is_leaf, h.is_leaf, w.grad, h.grad)
` },
  { id: "graph-freed", title: "The graph is freed", blurb: "backward() frees saved tensors: a second backward fails unless retain_graph=True.",
    code: `# backward() frees what the graph saved; going through it twice needs retain_graph=True.
import torch

x = torch.tensor(2.0, requires_grad=True)
y = x * x
y.backward(retain_graph=True)
y.backward()            # fine: the graph was kept, and x.grad accumulates to 8
print(x.grad)
z = x * x
z.backward()
z.backward()            # fails: this graph was already freed
` },
  { id: "detach", title: "detach and no_grad", blurb: "detach() and no_grad() cut the graph: no gradient flows through what they make.",
    code: `# detach() and torch.no_grad() cut the graph: no gradient goes through their results.
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * x
z = y.detach()
with torch.no_grad():
    s = x * 10
out = (y + z + s).sum()
out.backward()
print(z.requires_grad, s.requires_grad, x.grad)
` },
  { id: "inplace", title: "In-place hazard", blurb: "Changing in place a tensor that backward saved is caught by its version counter.",
    code: `# Modifying in place a tensor that backward needs is detected (version counter).
import torch

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.exp()          # exp keeps its output for the backward pass
y.add_(1)            # ... which this line changes in place
y.sum().backward()   # RuntimeError: modified by an inplace operation
` },
  { id: "accumulate", title: "Gradients accumulate", blurb: "Without zeroing, .grad keeps adding up over steps: watch w.grad grow.",
    code: `# .grad adds up across backward passes until someone clears it.
import torch

w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    loss = (w * 2 - 4) ** 2
    loss.backward()
    print(step, w.grad.item())   # grows every step
    # the fix: w.grad = None (or optimizer.zero_grad()) before the next backward
` },
  { id: "finite-diff", title: "Finite-difference check", blurb: "Compare the autograd gradient with a numerical estimate, then let gradcheck do it.",
    code: `# Check an autograd gradient against a central finite difference.
import torch

def f(t):
    return torch.sin(t) * t ** 2

x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
f(x).backward()
eps = 1e-6
numeric = (f(x.detach() + eps) - f(x.detach() - eps)) / (2 * eps)
print(x.grad.item(), numeric.item())
print(torch.autograd.gradcheck(f, (x,)))
` },
  { id: "recursion", title: "Recursion makes a tree", blurb: "A recursive reduction builds a tree-shaped graph that follows the call tree.",
    code: `# A recursive function builds a tree of nodes, one branch per call.
import torch

leaves = torch.arange(1.0, 9.0, requires_grad=True)

def reduce(v):
    if v.numel() == 1:
        return v.squeeze()
    half = v.numel() // 2
    return torch.maximum(reduce(v[:half]), reduce(v[half:])) + 0.1 * v.mean()

out = reduce(leaves)
out.backward()
print(out.item(), leaves.grad)
` },
  { id: "checkpoint", title: "Checkpointing memory", blurb: "Checkpointed blocks save less for backward and recompute it during the backward pass.",
    code: `# Gradient checkpointing: fewer saved tensors, recomputed during backward.
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 64), nn.Tanh()) for _ in range(4))
x = torch.randn(16, 64, requires_grad=True)
h = x
for block in blocks:
    h = checkpoint(block, h, use_reentrant=False)
h.pow(2).mean().backward()
print(x.grad.norm())
` },
  { id: "double-backward", title: "Double backward", blurb: "create_graph=True records the backward pass itself, so it can be differentiated again.",
    code: `# Second derivatives: with create_graph=True the backward pass is recorded as a graph too.
import torch

x = torch.tensor(3.0, requires_grad=True)
y = x ** 3
(dy,) = torch.autograd.grad(y, x, create_graph=True)   # 3x^2 = 27
dy.backward()                                          # 6x = 18
print(dy.item(), x.grad.item())
` },
  { id: "transformer", title: "Transformer encoder", blurb: "A bigger graph: two identical encoder layers collapse into one box you can open.",
    code: `# A two-layer transformer encoder: a graph of hundreds of nodes in nested modules.
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, batch_first=True)
encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
tokens = torch.randn(2, 16, 64)
loss = encoder(tokens).pow(2).mean()
loss.backward()
print(loss.item())
` },
  { id: "compiled", title: "torch.compile", blurb: "A compiled function shows up as a single CompiledFunctionBackward node.",
    code: `# torch.compile traces f: its whole backward is one CompiledFunctionBackward node.
# backend="aot_eager" needs no C++ compiler.
import torch

def f(x):
    return (torch.sin(x) * x).sum()

x = torch.randn(8, requires_grad=True)
compiled = torch.compile(f, backend="aot_eager")
out = compiled(x)
out.backward()
print(out.grad_fn.name(), x.grad)
` },
];
