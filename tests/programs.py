"""The real programs a person judges gradtrace by (the README's screenshots show them): a GRU
cell unrolled 200 steps, a 20-step Adam training loop, a 6-layer transformer encoder. The page's
readability, playback and words tests all run these same three."""

GRU_200 = """import torch
from torch import nn
cell = nn.GRUCell(8, 16)
h = torch.zeros(1, 16)
xs = torch.randn(200, 1, 8)
for t in range(200):
    h = cell(xs[t], h)
h.sum().backward()
"""

ADAM_20 = """import torch
from torch import nn
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), 1e-2)
x = torch.randn(32, 4)
y = torch.randn(32, 1)
for step in range(20):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""

ADAM_ACTIVATIONS = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 6), torch.randn(32, 1)
for step in range(20):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""
"""A 20-step Adam loop whose layers the dynamics panel reads: a ReLU (its dead share) and a
tanh (its saturation) between three Linear layers."""

TRANSFORMER_6 = """import torch
from torch import nn
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 6)
x = torch.randn(2, 5, 32)
enc(x).sum().backward()
"""

# The programs a teacher preparing a class tried (tests/browser/test_teacher.py): a GAN step
# (two Sequential models, G called three times), a PINN (u → du/dx → d²u/dx² with
# create_graph=True), and MAML (an inner step whose gradient is part of the outer loss).
GAN_STEP = """import torch
from torch import nn
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.SGD(G.parameters(), lr=0.01)
opt_d = torch.optim.SGD(D.parameters(), lr=0.01)
real = torch.randn(8, 2)
for step in range(3):
    z = torch.randn(8, 4)
    fake = G(z)
    d_loss = nn.functional.softplus(-D(real)).mean() + nn.functional.softplus(D(fake.detach())).mean()
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = nn.functional.softplus(-D(fake)).mean()
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
"""

PINN = """import torch
from torch import nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.linspace(0, 1, 5).unsqueeze(1).requires_grad_()
u = net(x)
du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
d2u = torch.autograd.grad(du.sum(), x, create_graph=True)[0]
residual = d2u + torch.sin(x) * u
loss = residual.pow(2).mean()
loss.backward()
"""

MAML = """import torch
torch.manual_seed(0)
w = torch.randn(3, 1, requires_grad=True)
x_s, y_s = torch.randn(4, 3), torch.randn(4, 1)
x_q, y_q = torch.randn(4, 3), torch.randn(4, 1)
inner = ((x_s @ w - y_s) ** 2).mean()
g, = torch.autograd.grad(inner, w, create_graph=True)
w_fast = w - 0.1 * g
outer = ((x_q @ w_fast - y_q) ** 2).mean()
outer.backward()
"""

UNSEEDED_MLP = """import torch
from torch import nn
l1, l2, l3 = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 1)
x = torch.randn(5, 4)
h = torch.relu(l1(x))
h = l2(h)
h = torch.tanh(h)
out = l3(h).relu().sum()
out.backward()
"""
"""A small MLP without a seed of its own: the run's seed draws its weights and inputs (the
comparison's tests: the same seed twice, another seed, a line inserted)."""


# The user's names and what the graph cannot show (tests/capture/test_definitions.py, and the
# page: tests/browser/test_names_page.py): a tiny LM with a tied embedding, a fine-tune of a
# frozen backbone under no_grad, a from-scratch program defining its leaves three ways.
_H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"

TINY_LM = _H + """class TinyLM(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.emb.weight   # weight tying
    def forward(self, ids):
        e = self.emb(ids)
        h = torch.tanh(self.mix(e))
        logits = self.lm_head(h)
        return logits
model = TinyLM(11, 6)
ids = torch.tensor([[1, 2, 3, 4]])
logits = model(ids[:, :-1])
loss = F.cross_entropy(logits.reshape(-1, 11), ids[:, 1:].reshape(-1))
loss.backward()
"""

UNTIED_LM = TINY_LM.replace("        self.lm_head.weight = self.emb.weight   # weight tying\n", "")

FINE_TUNE = _H + """backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8))
for p in backbone.parameters():
    p.requires_grad = False
head = nn.Linear(8, 2)
x = torch.randn(5, 4)
with torch.no_grad():
    feats = backbone(x)
    norm = feats.norm()
logits = head(feats / norm)
loss = F.cross_entropy(logits, torch.tensor([0, 1, 0, 1, 1]))
loss.backward()
"""

SCRATCH = _H + """x = torch.randn(3, requires_grad=True)
W = torch.randn(3, 3)
W.requires_grad_()
b = torch.zeros(3)
b.requires_grad = True
a = x @ W
h = torch.tanh(a + b)
for step in range(3):
    h = h * 0.5
y = h.sum()
y.backward()
"""


# The PyTorch tutorial's polynomial fit at its real length (2,000 iterations, manual SGD),
# and its dynamic_net at 30,000 (its last printed line comes well after a limit stops it).
POLY_FIT_2000 = """import math
import torch
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
a = torch.randn((), requires_grad=True)
b = torch.randn((), requires_grad=True)
c = torch.randn((), requires_grad=True)
d = torch.randn((), requires_grad=True)
learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
"""

DYNAMIC_NET_30000 = """import math
import random
import torch
class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))
    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
model = DynamicNet()
criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(30000):
    y_pred = model(x)
    loss = criterion(y_pred, y)
    if t % 20 == 19:
        print(t, loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("done")
"""

# A training loop that clips its gradients each step (the `.grad` the optimizer uses is not
# what backward left): the page's last step, its sentence and the clipping line must agree.
CLIP_LOOP = """import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4)
for step in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean() * 50
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
"""

# Two models in one snippet, as in PyTorch's visualizing-gradients tutorial: the same network
# with and without batch norm, each trained a few steps by one function.
TWO_MODELS = """import torch
from torch import nn
torch.manual_seed(0)
def net(batchnorm):
    layers = []
    for _ in range(3):
        layers += [nn.Linear(8, 8)] + ([nn.BatchNorm1d(8)] if batchnorm else []) + [nn.Sigmoid()]
    return nn.Sequential(*layers, nn.Linear(8, 1))
model_bn = net(True)
model_nobn = net(False)
x, y = torch.randn(16, 8), torch.randn(16, 1)
def fit(model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
fit(model_bn)
fit(model_nobn)
"""
