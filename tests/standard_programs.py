"""Ordinary training programs from standard practice, none of them written for a feature: a CNN
with batch norm, an LSTM language model with gradient clipping, a VAE, a transformer encoder
with AdamW and a cosine schedule, a ResNet with group norm, gradient accumulation, a seq2seq
GRU, fused attention, fine-tuning a head on a frozen backbone, plain SGD on a tanh MLP,
multi-head attention, CPU autocast to bfloat16, a WGAN gradient penalty, a custom autograd
Function, evaluation between training steps (batch norm, dropout, OneCycle, value clipping),
an EMA of the weights, weight normalization, truncated backpropagation through time,
gradient checkpointing in a loop, a GAN step with two optimizers, two losses backward in turn,
an embedding with a padding index, a saliency map, parameter groups with a schedule, a focal
loss, a packed bidirectional LSTM, a ResNet block with in-place ReLU and residual add,
distillation, a contrastive loss, L-BFGS with a closure, a forward hook's features in the loss,
a siamese network, freezing midway, a causal transformer decoder, a Jacobian and Hessian, a
linear warmup, a static input buffer refilled each step; spectral normalization, an orthogonal
parametrization, REINFORCE with a baseline, a square root kept safe by two ``where``s, CTC,
an encoder-decoder ``nn.Transformer``, SWA, mixup, a temporal convolution with a plateau
schedule, a tied autoencoder, a triplet loss, a physics-informed derivative in the loss,
pruning, a straight-through Gumbel softmax, a DQN's target network, a frozen pretrained
embedding with a positional embedding made of zeros, multi-label BCE, a GRU's state carried
across chunks; attention masked with -inf by hand, CLIP's learned temperature, a gradient
reversal layer, batch norm's statistics frozen while fine-tuning, a hinge loss from zeros, a
straight-through quantizer, actions masked out of a policy's logits; Monte Carlo dropout, a
deep ReLU net with Kaiming init, a sequence's losses stacked, a mean over observed targets
(``nanmean``), evaluation under ``inference_mode``, a regression on a log target; a diffusion
model's noise-prediction step, message passing on a graph, a Gaussian process's marginal
likelihood, rotary attention, second-order MAML, a mixture density network, a dice loss and
word2vec with negative sampling; label smoothing with ignored targets, a tensor hook that clamps a
hidden gradient, an LSTM whose state is carried and detached, weights initialized under
``no_grad`` with Nesterov momentum, BCE with a positive weight, a cosine embedding loss, a
transposed-convolution decoder, a custom Function with a non-differentiable output and an
intermediate's ``retain_grad``; a LoRA adapter on a frozen layer, a Huber loss with gradients
clipped by value under RMSprop, attention with a key padding mask, a pre-norm residual stack
with AdamW and a step schedule, and a bootstrapped target computed under ``no_grad``; FGSM
adversarial training (the input's gradient from ``autograd.grad``), style transfer optimizing an
image through a frozen network, a RealNVP coupling layer, prototypical networks on ``cdist``, a
padded batch through a GRU with a masked loss, multi-task weights learned as log-variances, a
pixel-shuffle upsampler, SGD by hand that sets ``.grad`` to None, an L2 penalty written out, and
an optimizer given the head only while ``model.zero_grad()`` clears the rest; from PyTorch's
tutorials, a DQN's target network updated softly through its state dict, a character RNN trained
by SGD through ``.data``, an FGSM attack on a model in eval mode, style transfer with L-BFGS and a
closure that clamps the image, and a seq2seq decoder with random teacher forcing; features
extracted by a backbone read through ``.detach()`` for a head the optimizer alone holds, and a
spatial transformer (``affine_grid``, ``grid_sample``); self-supervised pairs (BYOL with its EMA
target, SimSiam's stop-gradient, Barlow Twins, both views through one batch-normed encoder on one
line), PCGrad's gradient surgery, a top-k mixture of experts, NeRF's volume rendering, a linear
CRF's forward algorithm, a neural ODE by Euler steps, PPO's clipped objective, SAC with its
temperature and a soft target, stochastic depth with LayerScale, a Hutchinson trace logged while training, bfloat16
parameters, a 3-D convolution, ViT patches by ``unfold``, distillation by ``kl_div`` with a log
target, a quantile loss, a VQ-VAE, non-reentrant checkpointing, Sinkhorn transport, a Poisson
loss, a channels-last CNN, fake-quantized training and a DCGAN step with both discriminator calls
on one line. The
judges must stay silent on all of them and keep every number exactly
(tests/analysis/test_standard_practice.py)."""

from __future__ import annotations

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
STANDARD: dict[str, str] = {}
STANDARD["cnn_bn_sgd"] = H + """
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                    nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
x = torch.randn(16, 1, 12, 12); y = torch.randint(0, 10, (16,))
for step in range(12):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
"""
STANDARD["lstm_lm_clip"] = H + """
class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.rnn = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.out = nn.Linear(32, 50)
    def forward(self, t):
        h, _ = self.rnn(self.emb(t)); return self.out(h)
m = LM(); opt = torch.optim.Adam(m.parameters(), lr=3e-3)
data = torch.randint(0, 50, (4, 21))
for step in range(8):
    logits = m(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 50), data[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward()
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
"""
STANDARD["vae"] = H + """
class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(20, 32); self.mu = nn.Linear(32, 4); self.lv = nn.Linear(32, 4)
        self.dec = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 20))
    def forward(self, x):
        h = F.relu(self.enc(x)); mu, lv = self.mu(h), self.lv(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv)
        return self.dec(z), mu, lv
m = VAE(); opt = torch.optim.Adam(m.parameters(), 1e-3)
x = torch.rand(32, 20)
for step in range(10):
    rec, mu, lv = m(x)
    kl = -0.5 * torch.mean(1 + lv - mu.pow(2) - lv.exp())
    loss = F.mse_loss(rec, x) + kl
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["transformer_encoder_adamw"] = H + """
layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True,
                                   norm_first=True)
enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
head = nn.Linear(32, 3)
params = list(enc.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=8)
x = torch.randn(4, 10, 32); y = torch.randint(0, 3, (4,))
for step in range(8):
    out = head(enc(x).mean(dim=1))
    loss = F.cross_entropy(out, y)
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
"""
STANDARD["resnet_groupnorm"] = H + """
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1); self.n1 = nn.GroupNorm(4, c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1); self.n2 = nn.GroupNorm(4, c)
    def forward(self, x):
        return F.silu(x + self.n2(self.c2(F.silu(self.n1(self.c1(x))))))
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), *[Block(8) for _ in range(3)], nn.AdaptiveAvgPool2d(1),
                    nn.Flatten(), nn.Linear(8, 5))
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(8, 3, 8, 8); y = torch.randint(0, 5, (8,))
for step in range(6):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["grad_accum"] = H + """
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(64, 8); y = torch.randn(64, 1)
for step in range(5):
    opt.zero_grad()
    for micro in range(4):
        xb, yb = x[micro*16:(micro+1)*16], y[micro*16:(micro+1)*16]
        loss = F.mse_loss(model(xb), yb) / 4
        loss.backward()
    opt.step()
"""
STANDARD["gru_seq2seq"] = H + """
enc = nn.GRU(6, 12, batch_first=True); dec = nn.GRU(6, 12, batch_first=True); out = nn.Linear(12, 6)
params = [*enc.parameters(), *dec.parameters(), *out.parameters()]
opt = torch.optim.RMSprop(params, lr=1e-3)
src = torch.randn(3, 7, 6); tgt = torch.randn(3, 5, 6)
for step in range(6):
    _, h = enc(src)
    y, _ = dec(tgt, h)
    loss = F.mse_loss(out(y), tgt)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["sdpa_attention"] = H + """
class Attn(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__(); self.qkv = nn.Linear(d, 3 * d); self.proj = nn.Linear(d, d); self.h = h
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))
m = nn.Sequential(nn.LayerNorm(16), Attn(), nn.LayerNorm(16), nn.Linear(16, 16))
opt = torch.optim.Adam(m.parameters(), 1e-3)
x = torch.randn(2, 6, 16)
for step in range(5):
    loss = m(x).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["finetune_frozen_lowlr"] = H + """
backbone = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
for p in backbone.parameters():
    p.requires_grad_(False)
head = nn.Linear(64, 2)
opt = torch.optim.AdamW(head.parameters(), lr=2e-5)
x = torch.randn(32, 10); y = torch.randint(0, 2, (32,))
for step in range(10):
    loss = F.cross_entropy(head(backbone(x)), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["mlp_sgd_small_lr"] = H + """
model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 20); y = torch.randn(128, 1)
for step in range(20):
    opt.zero_grad(); loss = F.mse_loss(model(x), y); loss.backward(); opt.step()
"""
STANDARD["mha_train"] = H + """
mha = nn.MultiheadAttention(16, 4, batch_first=True)
head = nn.Linear(16, 1)
opt = torch.optim.Adam([*mha.parameters(), *head.parameters()], 1e-3)
x = torch.randn(2, 5, 16)
for step in range(3):
    out, w = mha(x, x, x, need_weights=True)
    loss = head(out).pow(2).mean() + 0.01 * w.pow(2).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["autocast_cpu_bf16"] = H + """
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 8); y = torch.randn(8, 1)
for step in range(3):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
        loss = F.mse_loss(out.float(), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["wgan_gp"] = H + """
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt = torch.optim.Adam(D.parameters(), 1e-3, betas=(0.5, 0.9))
real = torch.randn(8, 2); fake = torch.randn(8, 2)
for step in range(3):
    eps = torch.rand(8, 1)
    mix = (eps * real + (1 - eps) * fake).requires_grad_(True)
    g, = torch.autograd.grad(D(mix).sum(), mix, create_graph=True)
    gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
    loss = D(fake).mean() - D(real).mean() + 10 * gp
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["custom_function"] = H + """
class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (x.abs() <= 1).to(g.dtype)
w = torch.randn(5, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(3):
    loss = Clamp.apply(w * 2).pow(2).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["eval_between"] = H + """
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.3), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, amsgrad=True)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=4)
x = torch.randn(16, 4); y = torch.randint(0, 2, (16,))
for step in range(4):
    model.train()
    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
    opt.zero_grad(); loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
    opt.step(); sched.step()
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean()
"""

STANDARD["ema_weights"] = H + """
import copy
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(16, 4); y = torch.randn(16, 1)
for step in range(4):
    loss = F.mse_loss(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(pm, alpha=0.1)
"""

STANDARD["weight_norm"] = H + """
lin = nn.utils.parametrizations.weight_norm(nn.Linear(6, 3))
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
x = torch.randn(5, 6)
for step in range(3):
    loss = lin(x).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["tbptt_lstmcell"] = H + """
cell = nn.LSTMCell(6, 12); head = nn.Linear(12, 1)
opt = torch.optim.Adam(list(cell.parameters()) + list(head.parameters()), lr=1e-2)
xs = torch.randn(20, 4, 6); ys = torch.randn(20, 4, 1)
h = torch.zeros(4, 12); c = torch.zeros(4, 12)
for start in range(0, 20, 5):
    h, c = h.detach(), c.detach()
    loss = 0
    for t in range(start, start + 5):
        h, c = cell(xs[t], (h, c))
        loss = loss + F.mse_loss(head(h), ys[t])
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["checkpoint_loop"] = H + """
from torch.utils.checkpoint import checkpoint
blocks = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.ReLU()) for _ in range(3))
head = nn.Linear(16, 1)
opt = torch.optim.Adam(list(blocks.parameters()) + list(head.parameters()), 1e-3)
x = torch.randn(8, 16); y = torch.randn(8, 1)
for step in range(3):
    h = x
    for b in blocks:
        h = checkpoint(b, h, use_reentrant=False)
    loss = F.mse_loss(head(h), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["gan_step"] = H + """
G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
og = torch.optim.Adam(G.parameters(), 2e-4, betas=(0.5, 0.999))
od = torch.optim.Adam(D.parameters(), 2e-4, betas=(0.5, 0.999))
real = torch.randn(8, 2) + 2
for step in range(3):
    z = torch.randn(8, 4); fake = G(z)
    d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(8, 1)) + \
             F.binary_cross_entropy_with_logits(D(fake.detach()), torch.zeros(8, 1))
    od.zero_grad(); d_loss.backward(); od.step()
    g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(8, 1))
    og.zero_grad(); g_loss.backward(); og.step()
"""

STANDARD["multitask_two_backward"] = H + """
trunk = nn.Linear(6, 16); a = nn.Linear(16, 1); b = nn.Linear(16, 3)
opt = torch.optim.SGD(list(trunk.parameters()) + list(a.parameters()) + list(b.parameters()), lr=0.05)
x = torch.randn(10, 6); ya = torch.randn(10, 1); yb = torch.randint(0, 3, (10,))
for step in range(3):
    opt.zero_grad()
    h = torch.tanh(trunk(x))
    F.mse_loss(a(h), ya).backward(retain_graph=True)
    F.cross_entropy(b(h), yb).backward()
    opt.step()
"""

STANDARD["padded_embedding"] = H + """
emb = nn.Embedding(30, 8, padding_idx=0); rnn = nn.GRU(8, 16, batch_first=True); out = nn.Linear(16, 30)
opt = torch.optim.Adam(list(emb.parameters()) + list(rnn.parameters()) + list(out.parameters()), 1e-3)
seq = torch.randint(1, 30, (4, 9)); seq[:, 6:] = 0
for step in range(3):
    h, _ = rnn(emb(seq[:, :-1]))
    loss = F.cross_entropy(out(h).reshape(-1, 30), seq[:, 1:].reshape(-1), ignore_index=0)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["saliency_input_grad"] = H + """
model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3)).eval()
for p in model.parameters():
    p.requires_grad_(False)
img = torch.randn(1, 1, 8, 8, requires_grad=True)
score = model(img)[0, 1]
score.backward()
sal = img.grad.abs().amax(dim=1)
"""

STANDARD["param_groups_sched"] = H + """
body = nn.Sequential(nn.Linear(5, 20), nn.ReLU(), nn.Linear(20, 20), nn.ReLU()); head = nn.Linear(20, 2)
opt = torch.optim.SGD([{"params": body.parameters(), "lr": 1e-3}, {"params": head.parameters()}],
                      lr=1e-2, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
x = torch.randn(32, 5); y = torch.randint(0, 2, (32,))
for step in range(5):
    loss = F.cross_entropy(head(body(x)), y)
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); sched.step()
"""

STANDARD["focal_bce_logits"] = H + """
m = nn.Sequential(nn.Linear(10, 32), nn.SiLU(), nn.Linear(32, 1))
opt = torch.optim.RMSprop(m.parameters(), lr=1e-3)
x = torch.randn(64, 10); y = (torch.rand(64, 1) < 0.1).float()
for step in range(4):
    logits = m(x)
    bce = F.binary_cross_entropy_with_logits(logits, y, reduction="none")
    p = torch.sigmoid(logits); pt = p * y + (1 - p) * (1 - y)
    loss = ((1 - pt) ** 2 * bce).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["packed_bilstm"] = H + """
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
rnn = nn.LSTM(5, 8, batch_first=True, bidirectional=True); head = nn.Linear(16, 2)
opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), 1e-3)
x = torch.randn(3, 6, 5); lengths = torch.tensor([6, 4, 2]); y = torch.randint(0, 2, (3,))
for step in range(3):
    out, (h, c) = rnn(pack_padded_sequence(x, lengths, batch_first=True))
    loss = F.cross_entropy(head(torch.cat([h[0], h[1]], 1)), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["inplace_relu_residual"] = H + """
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(4, 4, 3, padding=1); self.b1 = nn.BatchNorm2d(4); self.relu = nn.ReLU(inplace=True)
        self.c2 = nn.Conv2d(4, 4, 3, padding=1); self.b2 = nn.BatchNorm2d(4)
    def forward(self, x):
        out = self.relu(self.b1(self.c1(x)))
        out = self.b2(self.c2(out))
        out += x
        return self.relu(out)
net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), Block(), Block(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                    nn.Linear(4, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(8, 1, 8, 8); y = torch.randint(0, 3, (8,))
for step in range(3):
    loss = F.cross_entropy(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["distillation_kl"] = H + """
teacher = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5)).eval()
student = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 5))
opt = torch.optim.Adam(student.parameters(), 1e-3)
x = torch.randn(16, 10); y = torch.randint(0, 5, (16,)); T = 4.0
for step in range(3):
    with torch.no_grad():
        t = teacher(x)
    s = student(x)
    kd = F.kl_div(F.log_softmax(s / T, 1), F.softmax(t / T, 1), reduction="batchmean") * T * T
    loss = 0.5 * kd + 0.5 * F.cross_entropy(s, y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["simclr_contrastive"] = H + """
enc = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 16))
opt = torch.optim.SGD(enc.parameters(), lr=0.05)
x = torch.randn(8, 12)
for step in range(3):
    a = x + 0.1 * torch.randn_like(x); b = x + 0.1 * torch.randn_like(x)
    z = F.normalize(enc(torch.cat([a, b])), dim=1)
    sim = z @ z.t() / 0.5
    sim = sim.masked_fill(torch.eye(16, dtype=torch.bool), float("-inf"))
    target = torch.cat([torch.arange(8, 16), torch.arange(0, 8)])
    loss = F.cross_entropy(sim, target)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["lbfgs_closure"] = H + """
w = torch.zeros(3, requires_grad=True)
X = torch.randn(20, 3); y = X @ torch.tensor([1.0, -2.0, 0.5]) + 0.1 * torch.randn(20)
opt = torch.optim.LBFGS([w], lr=1, max_iter=5)
def closure():
    opt.zero_grad()
    loss = ((X @ w - y) ** 2).mean()
    loss.backward()
    return loss
for step in range(2):
    opt.step(closure)
"""

STANDARD["forward_hook_features"] = H + """
net = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 1))
feats = {}
net[2].register_forward_hook(lambda m, i, o: feats.__setitem__("mid", o))
opt = torch.optim.Adam(net.parameters(), 1e-2)
x = torch.randn(10, 6); y = torch.randn(10, 1)
for step in range(3):
    out = net(x)
    loss = F.mse_loss(out, y) + 1e-3 * feats["mid"].pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["siamese_shared"] = H + """
tower = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.Adam(tower.parameters(), 1e-3)
a = torch.randn(6, 8); b = torch.randn(6, 8); same = torch.tensor([1., 0., 1., 0., 1., 0.])
for step in range(3):
    d = F.pairwise_distance(tower(a), tower(b))
    loss = (same * d.pow(2) + (1 - same) * F.relu(1.0 - d).pow(2)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["freeze_midway"] = H + """
base = nn.Linear(6, 8); head = nn.Linear(8, 1)
opt = torch.optim.SGD(list(base.parameters()) + list(head.parameters()), lr=0.05)
x = torch.randn(12, 6); y = torch.randn(12, 1)
for step in range(4):
    if step == 2:
        base.requires_grad_(False)
    loss = F.mse_loss(head(torch.relu(base(x))), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["causal_decoder"] = H + """
layer = nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
dec = nn.TransformerDecoder(layer, 2); emb = nn.Embedding(20, 16); out = nn.Linear(16, 20)
params = list(dec.parameters()) + list(emb.parameters()) + list(out.parameters())
opt = torch.optim.AdamW(params, 1e-3)
tgt = torch.randint(0, 20, (2, 7)); memory = torch.randn(2, 5, 16)
mask = nn.Transformer.generate_square_subsequent_mask(6)
for step in range(2):
    h = dec(emb(tgt[:, :-1]), memory, tgt_mask=mask, tgt_is_causal=True)
    loss = F.cross_entropy(out(h).reshape(-1, 20), tgt[:, 1:].reshape(-1))
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["jacobian_hessian"] = H + """
from torch.autograd.functional import jacobian, hessian
f = lambda x: (x.sin() * x.pow(2)).sum()
x = torch.randn(4)
J = jacobian(lambda v: v.sin() * v, x)
Hm = hessian(f, x)
w = torch.randn(4, requires_grad=True)
loss = (Hm @ w).pow(2).sum() + (J @ w).sum()
loss.backward()
"""

STANDARD["warmup_linear"] = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
x = torch.randn(32, 4); y = torch.randn(32, 1)
for step in range(5):
    loss = F.smooth_l1_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
"""

STANDARD["static_input_buffer"] = H + """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(5, 16, 4); target = torch.randn(5, 16, 1)
x = torch.empty(16, 4); y = torch.empty(16, 1)
for step in range(5):
    x.copy_(data[step]); y.copy_(target[step])
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["spectral_norm_critic"] = H + """
D = nn.Sequential(nn.utils.parametrizations.spectral_norm(nn.Linear(4, 16)), nn.LeakyReLU(0.2),
                  nn.utils.parametrizations.spectral_norm(nn.Linear(16, 1)))
opt = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.999))
real = torch.randn(32, 4) + 1.0; fake = torch.randn(32, 4)
for step in range(5):
    loss = F.softplus(-D(real)).mean() + F.softplus(D(fake)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["orthogonal_rnn"] = H + """
from torch.nn.utils.parametrizations import orthogonal
cell = nn.RNNCell(3, 8, nonlinearity="tanh")
orthogonal(cell, "weight_hh")
head = nn.Linear(8, 1)
opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.05)
x = torch.randn(6, 4, 3); y = torch.randn(4, 1)
for step in range(3):
    h = torch.zeros(4, 8)
    for t in range(6):
        h = cell(x[t], h)
    loss = F.mse_loss(head(h), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["reinforce_baseline"] = H + """
from torch.distributions import Categorical
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
value = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam([*policy.parameters(), *value.parameters()], lr=1e-2)
for episode in range(4):
    states = torch.randn(10, 4)
    dist = Categorical(logits=policy(states))
    actions = dist.sample()
    rewards = (actions == 1).float() - 0.1 * states[:, 0]
    returns = torch.flip(torch.cumsum(torch.flip(rewards, [0]), 0), [0])
    v = value(states).squeeze(-1)
    advantage = returns - v.detach()
    loss = -(dist.log_prob(actions) * advantage).mean() + F.mse_loss(v, returns) - 0.01 * dist.entropy().mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["safe_sqrt_where"] = H + """
w = torch.randn(8, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(4):
    pos = w > 0
    safe = torch.where(pos, w, torch.ones_like(w))
    f = torch.where(pos, torch.sqrt(safe), torch.zeros_like(w))
    loss = ((f - 0.5) ** 2).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["ctc_lstm"] = H + """
rnn = nn.LSTM(5, 12, bidirectional=True)
proj = nn.Linear(24, 6)
opt = torch.optim.Adam([*rnn.parameters(), *proj.parameters()], lr=1e-3)
x = torch.randn(15, 2, 5)
targets = torch.tensor([[1, 2, 3, 2], [4, 4, 5, 1]])
in_lens = torch.tensor([15, 12]); tgt_lens = torch.tensor([4, 3])
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
for step in range(3):
    h, _ = rnn(x)
    logp = proj(h).log_softmax(-1)
    loss = ctc(logp, targets, in_lens, tgt_lens)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["seq2seq_transformer"] = H + """
model = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=32, dropout=0.1, batch_first=True)
emb = nn.Embedding(20, 16); out = nn.Linear(16, 20)
params = [*model.parameters(), *emb.parameters(), *out.parameters()]
opt = torch.optim.AdamW(params, lr=1e-3)
src = torch.randint(1, 20, (3, 7)); tgt = torch.randint(1, 20, (3, 6))
src[2, 5:] = 0
mask = model.generate_square_subsequent_mask(5)
for step in range(2):
    y = model(emb(src), emb(tgt[:, :-1]), tgt_mask=mask, src_key_padding_mask=src == 0,
              memory_key_padding_mask=src == 0)
    loss = F.cross_entropy(out(y).reshape(-1, 20), tgt[:, 1:].reshape(-1), label_smoothing=0.1)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["swa_average"] = H + """
from torch.optim.swa_utils import AveragedModel, SWALR
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
swa = AveragedModel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = SWALR(opt, swa_lr=0.05, anneal_epochs=2)
x = torch.randn(16, 4); y = torch.randn(16, 1)
for step in range(5):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step >= 2:
        swa.update_parameters(model); sched.step()
pred = swa(x)
"""

STANDARD["mixup"] = H + """
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True)
x = torch.randn(12, 6); y = torch.randint(0, 3, (12,))
for step in range(4):
    lam = float(torch.distributions.Beta(0.4, 0.4).sample())
    perm = torch.randperm(12)
    out = net(lam * x + (1 - lam) * x[perm])
    loss = lam * F.cross_entropy(out, y) + (1 - lam) * F.cross_entropy(out, y[perm])
    opt.zero_grad(set_to_none=False); loss.backward(); opt.step()
"""

STANDARD["tcn_plateau"] = H + """
class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(2, 8, 3, dilation=1); self.c2 = nn.Conv1d(8, 8, 3, dilation=2)
        self.head = nn.Conv1d(8, 1, 1)
    def forward(self, x):
        x = F.relu(self.c1(F.pad(x, (2, 0))))
        x = F.relu(self.c2(F.pad(x, (4, 0))))
        return self.head(x)
net = TCN()
opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=1e-2)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
x = torch.randn(4, 2, 20); y = torch.randn(4, 1, 20)
for step in range(4):
    loss = F.smooth_l1_loss(net(x), y)
    opt.zero_grad(); loss.backward()
    nn.utils.clip_grad_value_(net.parameters(), 0.5)
    opt.step(); sched.step(loss.item())
"""

STANDARD["tied_autoencoder"] = H + """
enc = nn.Linear(10, 4)
dec_bias = nn.Parameter(torch.zeros(10))
opt = torch.optim.Adam([*enc.parameters(), dec_bias], lr=1e-2)
x = torch.rand(8, 10)
for step in range(4):
    z = torch.sigmoid(enc(x))
    loss = F.binary_cross_entropy_with_logits(F.linear(z, enc.weight.t(), dec_bias), x)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["triplet_margin"] = H + """
embed = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(embed.parameters(), lr=0.05)
a, p, n = torch.randn(10, 8), torch.randn(10, 8), torch.randn(10, 8)
for step in range(4):
    ea, ep, en = (F.normalize(embed(t), dim=1) for t in (a, p, n))
    loss = F.triplet_margin_loss(ea, ep, en, margin=0.3)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["pinn_derivative"] = H + """
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.linspace(0, 1, 12).unsqueeze(1).requires_grad_(True)
for step in range(3):
    u = net(x)
    du = torch.autograd.grad(u.sum(), x, create_graph=True)[0]
    residual = du + u
    loss = (residual ** 2).mean() + (net(torch.zeros(1, 1)) - 1).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["pruned_linear"] = H + """
import torch.nn.utils.prune as prune
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
prune.l1_unstructured(net[0], name="weight", amount=0.5)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(10, 8); y = torch.randint(0, 2, (10,))
for step in range(4):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["gumbel_straight_through"] = H + """
logits_net = nn.Linear(6, 4)
decoder = nn.Linear(4, 6)
opt = torch.optim.Adam([*logits_net.parameters(), *decoder.parameters()], lr=1e-2)
x = torch.randn(8, 6)
for step in range(4):
    code = F.gumbel_softmax(logits_net(x), tau=0.5, hard=True)
    loss = F.mse_loss(decoder(code), x)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["dqn_target_sync"] = H + """
import copy
online = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
target = copy.deepcopy(online)
opt = torch.optim.RMSprop(online.parameters(), lr=1e-3)
s = torch.randn(16, 4); a = torch.randint(0, 2, (16,)); r = torch.randn(16); s2 = torch.randn(16, 4)
for step in range(6):
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    with torch.no_grad():
        y = r + 0.99 * target(s2).max(1).values
    loss = F.huber_loss(q, y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 2 == 1:
        target.load_state_dict(online.state_dict())
"""

STANDARD["frozen_pretrained_embedding"] = H + """
vectors = torch.randn(30, 8)
emb = nn.Embedding.from_pretrained(vectors, freeze=True)
pos = nn.Parameter(torch.zeros(1, 5, 8))
clf = nn.Linear(8, 2)
opt = torch.optim.Adam([pos, *clf.parameters()], lr=1e-2)
tok = torch.randint(0, 30, (6, 5)); y = torch.randint(0, 2, (6,))
for step in range(4):
    h = (emb(tok) + pos).mean(1)
    loss = F.cross_entropy(clf(h), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["multilabel_posweight"] = H + """
net = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 5))
opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
x = torch.randn(20, 10); y = (torch.rand(20, 5) > 0.8).float()
crit = nn.BCEWithLogitsLoss(pos_weight=torch.full((5,), 4.0))
for step in range(5):
    loss = crit(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["gru_carry_detach"] = H + """
rnn = nn.GRU(3, 10, batch_first=True); head = nn.Linear(10, 1)
opt = torch.optim.Adam([*rnn.parameters(), *head.parameters()], lr=1e-3)
stream = torch.randn(2, 24, 3); target = torch.randn(2, 24, 1)
h = None
for chunk in range(3):
    xs = stream[:, chunk * 8:(chunk + 1) * 8]; ys = target[:, chunk * 8:(chunk + 1) * 8]
    out, h = rnn(xs, h)
    h = h.detach()
    loss = F.mse_loss(head(out), ys)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["masked_attention_inf"] = H + """
q = nn.Linear(8, 8); k = nn.Linear(8, 8); v = nn.Linear(8, 8)
opt = torch.optim.Adam([*q.parameters(), *k.parameters(), *v.parameters()], lr=1e-3)
x = torch.randn(2, 5, 8)
mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
for step in range(3):
    scores = q(x) @ k(x).transpose(-2, -1) / 8 ** 0.5
    scores = scores.masked_fill(mask, float("-inf"))
    out = torch.softmax(scores, -1) @ v(x)
    loss = out.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["clip_logit_scale"] = H + """
enc_a = nn.Linear(6, 4); enc_b = nn.Linear(5, 4)
logit_scale = nn.Parameter(torch.tensor(2.659))
opt = torch.optim.AdamW([*enc_a.parameters(), *enc_b.parameters(), logit_scale], lr=1e-3)
a = torch.randn(8, 6); b = torch.randn(8, 5)
for step in range(3):
    za = F.normalize(enc_a(a), dim=-1); zb = F.normalize(enc_b(b), dim=-1)
    logits = logit_scale.exp() * za @ zb.t()
    labels = torch.arange(8)
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        logit_scale.clamp_(0, 4.6052)
"""

STANDARD["gradient_reversal"] = H + """
class Reverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)
    @staticmethod
    def backward(ctx, g):
        return -g
feat = nn.Linear(4, 8); dom = nn.Linear(8, 2); cls = nn.Linear(8, 2)
opt = torch.optim.SGD([*feat.parameters(), *dom.parameters(), *cls.parameters()], lr=0.05)
x = torch.randn(12, 4); y = torch.randint(0, 2, (12,)); d = torch.randint(0, 2, (12,))
for step in range(3):
    h = F.relu(feat(x))
    loss = F.cross_entropy(cls(h), y) + F.cross_entropy(dom(Reverse.apply(h)), d)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["bn_frozen_stats_finetune"] = H + """
net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
net.train(); net[1].eval()
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x = torch.randn(16, 4); y = torch.randint(0, 2, (16,))
for step in range(3):
    loss = F.cross_entropy(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["svm_hinge"] = H + """
w = torch.zeros(4, requires_grad=True); b = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([w, b], lr=0.1)
x = torch.randn(20, 4); y = torch.sign(x[:, 0] - 0.5 * x[:, 1])
for step in range(5):
    loss = F.relu(1 - y * (x @ w + b)).mean() + 1e-3 * w.pow(2).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["quantize_ste"] = H + """
lin = nn.Linear(8, 4)
opt = torch.optim.SGD(lin.parameters(), lr=0.05)
x = torch.randn(5, 8); y = torch.randn(5, 4)
for step in range(3):
    w = lin.weight
    wq = w + (torch.round(w * 8) / 8 - w).detach()
    loss = F.mse_loss(F.linear(x, wq, lin.bias), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["masked_action_logits"] = H + """
policy = nn.Linear(5, 6)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
s = torch.randn(4, 5)
allowed = torch.rand(4, 6) > 0.3
allowed[:, 0] = True
for step in range(3):
    logits = policy(s).masked_fill(~allowed, float("-inf"))
    loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["mc_dropout"] = H + """
net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(16, 4); y = torch.randn(16, 1)
for step in range(3):
    loss = F.mse_loss(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
net.train()
with torch.no_grad():
    samples = torch.stack([net(x[:4]) for _ in range(10)])
    mean, std = samples.mean(0), samples.std(0)
"""

STANDARD["deep_relu_kaiming"] = H + """
layers = []
for i in range(10):
    lin = nn.Linear(32, 32)
    nn.init.kaiming_normal_(lin.weight, nonlinearity="relu"); nn.init.zeros_(lin.bias)
    layers += [lin, nn.ReLU()]
net = nn.Sequential(*layers, nn.Linear(32, 1))
opt = torch.optim.SGD(net.parameters(), lr=1e-3)
x = torch.randn(64, 32); y = torch.randn(64, 1)
for step in range(3):
    loss = F.mse_loss(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["seq_losses_stacked"] = H + """
cell = nn.GRUCell(3, 8); head = nn.Linear(8, 1)
opt = torch.optim.Adam([*cell.parameters(), *head.parameters()], lr=1e-3)
xs = torch.randn(6, 4, 3); ys = torch.randn(6, 4, 1)
for epoch in range(2):
    h = torch.zeros(4, 8); losses = []
    for t in range(6):
        h = cell(xs[t], h)
        losses.append(F.mse_loss(head(h), ys[t]))
    loss = torch.stack(losses).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["nanmean_missing_targets"] = H + """
net = nn.Linear(4, 3); opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(8, 4); y = torch.randn(8, 3); observed = torch.rand(8, 3) > 0.3
for step in range(3):
    err = torch.where(observed, (net(x) - y) ** 2, torch.nan)
    loss = err.nanmean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["inference_mode_eval"] = H + """
net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x = torch.randn(16, 4); y = torch.randint(0, 2, (16,)); xv = torch.randn(8, 4)
for step in range(3):
    net.train()
    loss = F.cross_entropy(net(x), y); opt.zero_grad(); loss.backward(); opt.step()
    net.eval()
    with torch.inference_mode():
        pred = net(xv).argmax(1)
"""

STANDARD["log_target_regression"] = H + """
net = nn.Linear(3, 1); opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.rand(16, 3) * 10; y = torch.rand(16, 1) * 100
for step in range(3):
    loss = F.mse_loss(net(x), torch.log(1 + y))
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["diffusion_step"] = H + """
import math
class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.t_proj = nn.Linear(16, 32); self.inp = nn.Linear(4, 32); self.out = nn.Linear(32, 4)
    def forward(self, x, t):
        half = 8
        freqs = torch.exp(-math.log(10000) * torch.arange(half) / half)
        emb = torch.cat([torch.sin(t[:, None] * freqs), torch.cos(t[:, None] * freqs)], -1)
        return self.out(F.silu(self.inp(x) + self.t_proj(emb)))
model = Denoiser(); opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
betas = torch.linspace(1e-4, 0.02, 100); abar = torch.cumprod(1 - betas, 0)
x0 = torch.randn(16, 4)
for step in range(3):
    t = torch.randint(0, 100, (16,)); noise = torch.randn_like(x0)
    xt = abar[t].sqrt()[:, None] * x0 + (1 - abar[t]).sqrt()[:, None] * noise
    loss = F.mse_loss(model(xt, t.float()), noise)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["gnn_message_passing"] = H + """
lin_msg = nn.Linear(8, 8); lin_upd = nn.Linear(16, 8); head = nn.Linear(8, 1)
opt = torch.optim.Adam([*lin_msg.parameters(), *lin_upd.parameters(), *head.parameters()], lr=1e-2)
x = torch.randn(6, 8)
edges = torch.tensor([[0, 1, 2, 3, 4, 5, 0, 2], [1, 2, 3, 4, 5, 0, 3, 5]])
y = torch.randn(1)
for step in range(3):
    h = x
    for layer in range(2):
        msg = lin_msg(h)[edges[0]]
        agg = torch.zeros_like(h).index_add(0, edges[1], msg)
        deg = torch.bincount(edges[1], minlength=6).clamp(min=1).unsqueeze(1)
        h = F.relu(lin_upd(torch.cat([h, agg / deg], 1)))
    loss = F.mse_loss(head(h.mean(0)), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["gp_marginal_likelihood"] = H + """
log_ls = nn.Parameter(torch.tensor(0.0)); log_sf = nn.Parameter(torch.tensor(0.0))
log_sn = nn.Parameter(torch.tensor(-1.0))
opt = torch.optim.Adam([log_ls, log_sf, log_sn], lr=0.05)
X = torch.linspace(0, 1, 10).unsqueeze(1); Y = torch.sin(6 * X).squeeze(1)
for step in range(4):
    d2 = (X - X.t()) ** 2
    K = log_sf.exp() ** 2 * torch.exp(-0.5 * d2 / log_ls.exp() ** 2) + (log_sn.exp() ** 2 + 1e-5) * torch.eye(10)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(Y.unsqueeze(1), L)
    nll = 0.5 * (Y.unsqueeze(0) @ alpha).squeeze() + torch.log(torch.diagonal(L)).sum()
    opt.zero_grad(); nll.backward(); opt.step()
"""

STANDARD["rope_attention"] = H + """
def rope(x):
    d = x.shape[-1] // 2
    pos = torch.arange(x.shape[-2]).unsqueeze(1)
    theta = pos * torch.exp(-torch.arange(d) * (4.0 / d))
    cos, sin = torch.cos(theta), torch.sin(theta)
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)
qkv = nn.Linear(8, 24); proj = nn.Linear(8, 8)
opt = torch.optim.AdamW([*qkv.parameters(), *proj.parameters()], lr=1e-3)
x = torch.randn(2, 6, 8)
for step in range(2):
    q, k, v = qkv(x).chunk(3, -1)
    att = F.scaled_dot_product_attention(rope(q), rope(k), v, is_causal=True)
    loss = proj(att).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["maml_second_order"] = H + """
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for outer in range(2):
    xs, ys = torch.randn(8, 1), torch.randn(8, 1)
    xq, yq = torch.randn(8, 1), torch.randn(8, 1)
    params = list(model.parameters())
    def fwd(p, x):
        return F.linear(torch.tanh(F.linear(x, p[0], p[1])), p[2], p[3])
    inner = F.mse_loss(fwd(params, xs), ys)
    grads = torch.autograd.grad(inner, params, create_graph=True)
    fast = [p - 0.1 * g for p, g in zip(params, grads)]
    outer_loss = F.mse_loss(fwd(fast, xq), yq)
    meta_opt.zero_grad(); outer_loss.backward(); meta_opt.step()
"""

STANDARD["mixture_density"] = H + """
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 9))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.rand(32, 1); y = torch.sin(4 * x) + 0.1 * torch.randn(32, 1)
for step in range(3):
    logit, mu, log_sigma = net(x).chunk(3, -1)
    log_prob = torch.distributions.Normal(mu, log_sigma.exp()).log_prob(y)
    loss = -torch.logsumexp(F.log_softmax(logit, -1) + log_prob, -1).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["dice_segmentation"] = H + """
net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(2, 1, 8, 8); target = (torch.rand(2, 1, 8, 8) > 0.7).float()
for step in range(3):
    logits = net(x)
    p = torch.sigmoid(logits)
    inter = (p * target).sum((1, 2, 3)); union = p.sum((1, 2, 3)) + target.sum((1, 2, 3))
    dice = 1 - (2 * inter + 1) / (union + 1)
    loss = dice.mean() + F.binary_cross_entropy_with_logits(logits, target)
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["word2vec_negative_sampling"] = H + """
center = nn.Embedding(50, 8); context = nn.Embedding(50, 8)
opt = torch.optim.SGD([*center.parameters(), *context.parameters()], lr=0.1)
pairs = torch.randint(0, 50, (16, 2)); negatives = torch.randint(0, 50, (16, 5))
for step in range(3):
    c = center(pairs[:, 0]); o = context(pairs[:, 1]); n = context(negatives)
    pos = F.logsigmoid((c * o).sum(-1))
    neg = F.logsigmoid(-(n @ c.unsqueeze(-1)).squeeze(-1)).sum(-1)
    loss = -(pos + neg).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""

STANDARD["label_smoothing"] = H + """
net = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 5))
opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=0.01)
x = torch.randn(24, 10); y = torch.randint(0, 5, (24,))
y[::5] = -100
for step in range(8):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y, label_smoothing=0.1, ignore_index=-100)
    loss.backward(); opt.step()
"""

STANDARD["tensor_hook_clip"] = H + """
lin1 = nn.Linear(6, 12); lin2 = nn.Linear(12, 1)
opt = torch.optim.SGD(list(lin1.parameters()) + list(lin2.parameters()), lr=0.05)
x = torch.randn(10, 6); y = torch.randn(10, 1)
for step in range(4):
    opt.zero_grad()
    h = torch.tanh(lin1(x))
    h.register_hook(lambda g: g.clamp(-0.01, 0.01))
    loss = F.mse_loss(lin2(h), y)
    loss.backward(); opt.step()
"""

STANDARD["lstm_hx_passed"] = H + """
lstm = nn.LSTM(4, 8, batch_first=True); head = nn.Linear(8, 1)
opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=1e-2)
x = torch.randn(3, 6, 4); y = torch.randn(3, 1)
h = (torch.zeros(1, 3, 8), torch.zeros(1, 3, 8))
for step in range(4):
    opt.zero_grad()
    out, h = lstm(x, h)
    h = (h[0].detach(), h[1].detach())
    loss = F.mse_loss(head(out[:, -1]), y)
    loss.backward(); opt.step()
"""

STANDARD["init_under_no_grad"] = H + """
net = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 1))
with torch.no_grad():
    for m in net:
        if isinstance(m, nn.Linear):
            m.weight.uniform_(-0.3, 0.3); m.bias.zero_()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True)
x = torch.randn(20, 5); y = x.sum(1, keepdim=True)
for step in range(6):
    opt.zero_grad(); loss = F.mse_loss(net(x), y); loss.backward(); opt.step()
"""

STANDARD["bce_logits_pos_weight"] = H + """
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.randn(32, 6); y = (torch.rand(32, 3) > 0.8).float()
crit = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([4.0, 4.0, 4.0]))
for step in range(6):
    opt.zero_grad(); loss = crit(net(x), y); loss.backward(); opt.step()
"""

STANDARD["cosine_embedding_margin"] = H + """
enc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
a = torch.randn(10, 8); b = torch.randn(10, 8); t = torch.where(torch.rand(10) > 0.5, 1.0, -1.0)
for step in range(5):
    opt.zero_grad(); loss = F.cosine_embedding_loss(enc(a), enc(b), t, margin=0.2); loss.backward(); opt.step()
"""

STANDARD["conv_transpose_decoder"] = H + """
dec = nn.Sequential(nn.ConvTranspose2d(4, 8, 4, stride=2, padding=1), nn.BatchNorm2d(8), nn.LeakyReLU(0.2),
                    nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1), nn.Tanh())
opt = torch.optim.Adam(dec.parameters(), lr=2e-3, betas=(0.5, 0.999))
z = torch.randn(6, 4, 3, 3); target = torch.rand(6, 1, 12, 12) * 2 - 1
for step in range(4):
    opt.zero_grad(); loss = F.mse_loss(dec(z), target); loss.backward(); opt.step()
"""

STANDARD["mark_non_differentiable"] = H + """
class SortWithIdx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        v, i = x.sort(dim=-1)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        return v, i
    @staticmethod
    def backward(ctx, gv, gi):
        i, = ctx.saved_tensors
        g = torch.zeros_like(gv)
        return g.scatter(-1, i, gv)
x = torch.randn(4, 5, requires_grad=True)
v, i = SortWithIdx.apply(x)
(v * torch.arange(5.0)).sum().backward()
"""

STANDARD["retain_grad_probe"] = H + """
w = nn.Parameter(torch.randn(5, 3) * 0.3)
x = torch.randn(7, 5)
h = x @ w
h.retain_grad()
out = torch.relu(h).pow(2).sum()
out.backward()
print(h.grad.abs().mean().item(), w.grad.norm().item())
"""
STANDARD["lora"] = H + """
base = nn.Linear(16, 16)
base.weight.requires_grad_(False); base.bias.requires_grad_(False)
A = nn.Parameter(torch.randn(4, 16) * 0.01)
B = nn.Parameter(torch.zeros(16, 4))
opt = torch.optim.AdamW([A, B], lr=1e-2)
x = torch.randn(8, 16); t = torch.randn(8, 16)
for step in range(5):
    out = base(x) + (x @ A.t()) @ B.t() * 2.0
    loss = F.mse_loss(out, t)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["huber_clip_value"] = H + """
net = nn.Sequential(nn.Linear(3, 8), nn.SiLU(), nn.Linear(8, 1))
opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
x = torch.randn(32, 3); y = torch.randn(32, 1) * 5
for step in range(5):
    loss = F.huber_loss(net(x), y, delta=1.0)
    opt.zero_grad(); loss.backward()
    torch.nn.utils.clip_grad_value_(net.parameters(), 0.5)
    opt.step()
"""
STANDARD["mha_padding_mask"] = H + """
mha = nn.MultiheadAttention(16, 4, batch_first=True)
x = torch.randn(2, 5, 16)
pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
out, w = mha(x, x, x, key_padding_mask=pad)
loss = out[~pad].pow(2).mean()
loss.backward()
"""
STANDARD["layernorm_gelu_residual"] = H + """
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4*d), nn.GELU(), nn.Linear(4*d, d))
    def forward(self, x): return x + self.ff(self.ln(x))
net = nn.Sequential(*[Block(16) for _ in range(3)], nn.LayerNorm(16), nn.Linear(16, 4))
opt = torch.optim.AdamW(net.parameters(), lr=3e-4, weight_decay=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)
x = torch.randn(4, 7, 16); y = torch.randint(0, 4, (4, 7))
for step in range(4):
    loss = F.cross_entropy(net(x).reshape(-1, 4), y.reshape(-1))
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); sched.step()
"""
STANDARD["detach_target_bootstrap"] = H + """
q = nn.Linear(4, 2)
opt = torch.optim.SGD(q.parameters(), lr=0.1)
s = torch.randn(8, 4); s2 = torch.randn(8, 4); r = torch.randn(8)
for step in range(3):
    with torch.no_grad():
        target = r + 0.9 * q(s2).max(dim=1).values
    pred = q(s).gather(1, torch.zeros(8, 1, dtype=torch.long)).squeeze(1)
    loss = F.smooth_l1_loss(pred, target)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["fgsm_adversarial"] = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
for step in range(3):
    x_adv = x.clone().requires_grad_(True)
    loss = F.cross_entropy(model(x_adv), y)
    grad, = torch.autograd.grad(loss, x_adv)
    x_adv = (x_adv + 0.1 * grad.sign()).detach()
    opt.zero_grad()
    loss = F.cross_entropy(model(x_adv), y)
    loss.backward()
    opt.step()
"""
STANDARD["style_transfer_input"] = H + """
net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1))
for p in net.parameters():
    p.requires_grad_(False)
content = torch.rand(1, 3, 8, 8)
target = net(content)
img = content.clone().requires_grad_(True)
opt = torch.optim.Adam([img], lr=0.05)
for step in range(5):
    opt.zero_grad()
    feats = net(img)
    gram = feats.flatten(2) @ feats.flatten(2).transpose(1, 2)
    loss = F.mse_loss(feats, target) + 1e-3 * gram.mean()
    loss.backward()
    opt.step()
    with torch.no_grad():
        img.clamp_(0, 1)
"""
STANDARD["realnvp_coupling"] = H + """
class Coupling(nn.Module):
    def __init__(self):
        super().__init__()
        self.s = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
        self.t = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1))
    def forward(self, x):
        a, b = x[:, :1], x[:, 1:]
        s = self.s(a)
        return torch.cat([a, b * torch.exp(s) + self.t(a)], 1), s.sum(1)
flow = Coupling()
opt = torch.optim.Adam(flow.parameters(), lr=1e-3)
x = torch.randn(64, 2) * torch.tensor([1.0, 3.0])
prior = torch.distributions.Normal(0.0, 1.0)
for step in range(5):
    z, logdet = flow(x)
    loss = -(prior.log_prob(z).sum(1) + logdet).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["prototypical_cdist"] = H + """
enc = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8))
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
support = torch.randn(3, 5, 6); query = torch.randn(3, 4, 6)
labels = torch.arange(3).repeat_interleave(4)
for step in range(3):
    protos = enc(support).mean(1)
    q = enc(query).reshape(12, 8)
    logits = -torch.cdist(q, protos) ** 2
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["padded_gru_masked_loss"] = H + """
from torch.nn.utils.rnn import pad_sequence
seqs = [torch.randn(n, 4) for n in (5, 3, 2)]
x = pad_sequence(seqs, batch_first=True)
mask = pad_sequence([torch.ones(n) for n in (5, 3, 2)], batch_first=True)
rnn = nn.GRU(4, 8, batch_first=True); out_l = nn.Linear(8, 1)
opt = torch.optim.Adam(list(rnn.parameters()) + list(out_l.parameters()), lr=1e-3)
y = torch.randn(3, 5)
for step in range(3):
    h, _ = rnn(x)
    pred = out_l(h).squeeze(-1)
    loss = (((pred - y) ** 2) * mask).sum() / mask.sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["uncertainty_weighted_multitask"] = H + """
shared = nn.Linear(4, 16); h1 = nn.Linear(16, 1); h2 = nn.Linear(16, 3)
log_vars = nn.Parameter(torch.zeros(2))
params = list(shared.parameters()) + list(h1.parameters()) + list(h2.parameters()) + [log_vars]
opt = torch.optim.Adam(params, lr=1e-2)
x, y1, y2 = torch.randn(16, 4), torch.randn(16, 1), torch.randint(0, 3, (16,))
for step in range(4):
    f = F.relu(shared(x))
    l1 = F.mse_loss(h1(f), y1); l2 = F.cross_entropy(h2(f), y2)
    loss = torch.exp(-log_vars[0]) * l1 + log_vars[0] + torch.exp(-log_vars[1]) * l2 + log_vars[1]
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["pixel_shuffle_upsampler"] = H + """
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, padding=1), nn.PixelShuffle(2))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
lr_img, hr = torch.rand(2, 1, 6, 6), torch.rand(2, 1, 12, 12)
for step in range(3):
    loss = F.l1_loss(net(lr_img), hr)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["manual_sgd_grad_none"] = H + """
w = torch.randn(3, 1, requires_grad=True); b = torch.zeros(1, requires_grad=True)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for step in range(5):
    for p in (w, b):
        p.grad = None
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p -= 0.1 * p.grad
"""
STANDARD["l2_penalty_by_hand"] = H + """
model = nn.Sequential(nn.Linear(5, 10), nn.Tanh(), nn.Linear(10, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(32, 5), torch.randn(32, 1)
for step in range(6):
    opt.zero_grad(set_to_none=True)
    l2 = sum(p.pow(2).sum() for p in model.parameters())
    loss = F.mse_loss(model(x), y) + 1e-4 * l2
    loss.backward()
    opt.step()
"""
STANDARD["head_only_optimizer"] = H + """
backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
head = nn.Linear(8, 2)
model = nn.Sequential(backbone, head)
opt = torch.optim.Adam(head.parameters(), lr=1e-2)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
for step in range(4):
    model.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
"""
STANDARD["dqn_soft_target_update"] = H + """
policy = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
target = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
target.load_state_dict(policy.state_dict())
opt = torch.optim.AdamW(policy.parameters(), lr=1e-3, amsgrad=True)
s, a, r, s2 = torch.randn(16, 4), torch.randint(0, 2, (16, 1)), torch.randn(16), torch.randn(16, 4)
done = torch.zeros(16, dtype=torch.bool)
TAU = 0.005
for step in range(4):
    q = policy(s).gather(1, a).squeeze(1)
    with torch.no_grad():
        nxt = target(s2).max(1).values
        nxt[done] = 0.0
    expected = r + 0.99 * nxt
    loss = nn.SmoothL1Loss()(q, expected)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy.parameters(), 100)
    opt.step()
    tsd, psd = target.state_dict(), policy.state_dict()
    for key in psd:
        tsd[key] = psd[key] * TAU + tsd[key] * (1 - TAU)
    target.load_state_dict(tsd)
"""
STANDARD["char_rnn_sgd_through_data"] = H + """
class RNN(nn.Module):
    def __init__(self, n_in, n_h, n_out):
        super().__init__()
        self.i2h = nn.Linear(n_in + n_h, n_h)
        self.h2o = nn.Linear(n_h, n_out)
    def forward(self, x, h):
        h = torch.tanh(self.i2h(torch.cat((x, h), 1)))
        return F.log_softmax(self.h2o(h), dim=1), h
rnn = RNN(10, 16, 4)
criterion = nn.NLLLoss()
lr = 0.005
for it in range(3):
    line = torch.randn(6, 1, 10); category = torch.tensor([it % 4])
    hidden = torch.zeros(1, 16)
    rnn.zero_grad()
    for i in range(line.size()[0]):
        output, hidden = rnn(line[i], hidden)
    loss = criterion(output, category)
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-lr)
"""
STANDARD["fgsm_attack_in_eval"] = H + """
model = nn.Sequential(nn.Flatten(), nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3))
model.eval()
def fgsm_attack(image, epsilon, data_grad):
    perturbed = image + epsilon * data_grad.sign()
    return torch.clamp(perturbed, 0, 1)
for k in range(3):
    data, target = torch.rand(1, 1, 4, 4), torch.tensor([k % 3])
    data.requires_grad = True
    output = model(data)
    loss = F.nll_loss(F.log_softmax(output, 1), target)
    model.zero_grad()
    loss.backward()
    data_grad = data.grad.data
    perturbed = fgsm_attack(data, 0.1, data_grad)
    out2 = model(perturbed)
    pred = out2.max(1, keepdim=True)[1]
"""
STANDARD["style_transfer_lbfgs_closure"] = H + """
cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1)).eval()
cnn.requires_grad_(False)
class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()
    def forward(self, x):
        self.loss = F.mse_loss(x, self.target)
        return x
content = torch.rand(1, 3, 8, 8)
cl = ContentLoss(cnn(content))
model = nn.Sequential(cnn, cl)
input_img = content.clone() + 0.1 * torch.randn(1, 3, 8, 8)
input_img.requires_grad_(True)
optimizer = torch.optim.LBFGS([input_img])
for run in range(2):
    def closure():
        with torch.no_grad():
            input_img.clamp_(0, 1)
        optimizer.zero_grad()
        model(input_img)
        loss = cl.loss
        loss.backward()
        return loss
    optimizer.step(closure)
with torch.no_grad():
    input_img.clamp_(0, 1)
"""
STANDARD["seq2seq_random_teacher_forcing"] = H + """
import random
random.seed(0)
enc = nn.GRU(8, 16, batch_first=True); dec = nn.GRUCell(8, 16); out = nn.Linear(16, 8); emb = nn.Embedding(8, 8)
params = [*enc.parameters(), *dec.parameters(), *out.parameters(), *emb.parameters()]
opt = torch.optim.Adam(params, lr=1e-3)
src = torch.randn(2, 5, 8); tgt = torch.randint(0, 8, (2, 4))
for it in range(2):
    _, h = enc(src); h = h[0]
    inp = torch.zeros(2, dtype=torch.long)
    loss = 0
    for t in range(4):
        h = dec(emb(inp), h)
        logits = out(h)
        loss = loss + F.cross_entropy(logits, tgt[:, t])
        inp = tgt[:, t] if random.random() < 0.5 else logits.argmax(1).detach()
    opt.zero_grad(); (loss / 4).backward(); opt.step()
"""
STANDARD["feature_extraction_detached"] = H + """
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
head = nn.Linear(8, 4)
opt = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(6, 3, 8, 8), torch.randint(0, 4, (6,))
for step in range(3):
    feats = backbone(x).detach()
    loss = F.cross_entropy(head(feats), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["spatial_transformer"] = H + """
loc = nn.Sequential(nn.Flatten(), nn.Linear(64, 6))
nn.init.zeros_(loc[1].weight)
with torch.no_grad():
    loc[1].bias.copy_(torch.tensor([1., 0, 0, 0, 1, 0]))
clf = nn.Sequential(nn.Flatten(), nn.Linear(64, 2))
opt = torch.optim.SGD(list(loc.parameters()) + list(clf.parameters()), lr=0.1)
x, y = torch.rand(4, 1, 8, 8), torch.randint(0, 2, (4,))
for step in range(3):
    theta = loc(x).view(-1, 2, 3)
    grid = F.affine_grid(theta, x.size(), align_corners=False)
    xt = F.grid_sample(x, grid, align_corners=False)
    loss = F.cross_entropy(clf(xt), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["byol"] = H + """
import copy
online = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
pred = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
target = copy.deepcopy(online)
for p in target.parameters():
    p.requires_grad_(False)
opt = torch.optim.Adam(list(online.parameters()) + list(pred.parameters()), lr=1e-3)
for step in range(3):
    x = torch.randn(16, 8)
    v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
    p1, p2 = pred(online(v1)), pred(online(v2))
    with torch.no_grad():
        z1, z2 = target(v1), target(v2)
    loss = (2 - 2 * F.cosine_similarity(p1, z2, dim=-1)).mean() + (2 - 2 * F.cosine_similarity(p2, z1, dim=-1)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    with torch.no_grad():
        for pt, po in zip(target.parameters(), online.parameters()):
            pt.mul_(0.99).add_(po, alpha=0.01)
"""
STANDARD["simsiam"] = H + """
enc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
pred = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 8))
opt = torch.optim.SGD(list(enc.parameters()) + list(pred.parameters()), lr=0.05, momentum=0.9)
def D(p, z):
    return -F.cosine_similarity(p, z.detach(), dim=-1).mean()
for step in range(3):
    x = torch.randn(16, 8)
    z1, z2 = enc(x + 0.1 * torch.randn_like(x)), enc(x + 0.1 * torch.randn_like(x))
    p1, p2 = pred(z1), pred(z2)
    loss = D(p1, z2) / 2 + D(p2, z1) / 2
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["pcgrad"] = H + """
net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
params = list(net.parameters())
for step in range(3):
    x = torch.randn(8, 4)
    out = net(x)
    l1 = out[:, 0].pow(2).mean(); l2 = (out[:, 1] - 1).pow(2).mean()
    g1 = torch.autograd.grad(l1, params, retain_graph=True)
    g2 = torch.autograd.grad(l2, params)
    f1 = torch.cat([g.flatten() for g in g1]); f2 = torch.cat([g.flatten() for g in g2])
    dot = f1 @ f2
    if dot < 0:
        f1 = f1 - dot / (f2 @ f2) * f2
    total = f1 + f2
    i = 0
    for p in params:
        n = p.numel(); p.grad = total[i:i + n].view_as(p).clone(); i += n
    opt.step()
"""
STANDARD["moe_topk"] = H + """
class MoE(nn.Module):
    def __init__(self, d=8, e=4, k=2):
        super().__init__()
        self.gate = nn.Linear(d, e); self.experts = nn.ModuleList([nn.Linear(d, d) for _ in range(e)]); self.k = k
    def forward(self, x):
        logits = self.gate(x)
        w, idx = logits.topk(self.k, dim=-1)
        w = w.softmax(-1)
        out = torch.zeros_like(x)
        for j, ex in enumerate(self.experts):
            mask = (idx == j)
            rows = mask.any(-1).nonzero(as_tuple=True)[0]
            if rows.numel() == 0:
                continue
            gate_w = (w * mask).sum(-1)[rows].unsqueeze(-1)
            out = out.index_add(0, rows, gate_w * ex(x[rows]))
        return out
moe = MoE()
opt = torch.optim.Adam(moe.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(12, 8)
    loss = (moe(x) - x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["nerf_render"] = H + """
mlp = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.Adam(mlp.parameters(), lr=5e-4)
for step in range(2):
    rays_o = torch.zeros(8, 3); rays_d = F.normalize(torch.randn(8, 3), dim=-1)
    t = torch.linspace(0.1, 4.0, 16)
    pts = rays_o[:, None] + rays_d[:, None] * t[None, :, None]
    raw = mlp(pts)
    rgb, sigma = torch.sigmoid(raw[..., :3]), F.relu(raw[..., 3])
    delta = torch.cat([t[1:] - t[:-1], torch.tensor([1e10])])
    alpha = 1 - torch.exp(-sigma * delta)
    trans = torch.cumprod(torch.cat([torch.ones(8, 1), 1 - alpha + 1e-10], -1), -1)[:, :-1]
    weights = alpha * trans
    color = (weights[..., None] * rgb).sum(1)
    loss = F.mse_loss(color, torch.full((8, 3), 0.5))
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["crf_forward"] = H + """
T, K = 6, 4
trans = nn.Parameter(torch.randn(K, K) * 0.1)
emit = nn.Linear(5, K)
opt = torch.optim.SGD([trans] + list(emit.parameters()), lr=0.1)
for step in range(2):
    x = torch.randn(T, 5); tags = torch.randint(0, K, (T,))
    e = emit(x)
    alpha = e[0]
    for t in range(1, T):
        alpha = torch.logsumexp(alpha.unsqueeze(1) + trans, dim=0) + e[t]
    logZ = torch.logsumexp(alpha, 0)
    score = e[torch.arange(T), tags].sum() + trans[tags[:-1], tags[1:]].sum()
    loss = logZ - score
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["neural_ode_euler"] = H + """
f = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
opt = torch.optim.Adam(f.parameters(), lr=1e-2)
for step in range(2):
    z = torch.randn(4, 2)
    for _ in range(10):
        z = z + 0.1 * f(z)
    loss = (z - torch.tensor([1.0, 0.0])).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["ppo_clip"] = H + """
from torch.distributions import Categorical
pi = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
v = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(list(pi.parameters()) + list(v.parameters()), lr=3e-4)
obs = torch.randn(32, 4)
with torch.no_grad():
    dist = Categorical(logits=pi(obs)); acts = dist.sample(); old_logp = dist.log_prob(acts)
    returns = torch.randn(32); adv = returns - v(obs).squeeze(-1)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
for epoch in range(3):
    dist = Categorical(logits=pi(obs))
    ratio = torch.exp(dist.log_prob(acts) - old_logp)
    l_clip = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
    l_v = F.mse_loss(v(obs).squeeze(-1), returns)
    loss = l_clip + 0.5 * l_v - 0.01 * dist.entropy().mean()
    opt.zero_grad(); loss.backward()
    nn.utils.clip_grad_norm_(list(pi.parameters()) + list(v.parameters()), 0.5); opt.step()
"""
STANDARD["sac_actor_critic"] = H + """
from torch.distributions import Normal
actor = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 2))
q = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
q_targ = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
q_targ.load_state_dict(q.state_dict())
log_alpha = torch.zeros(1, requires_grad=True)
a_opt = torch.optim.Adam(actor.parameters(), lr=3e-4)
q_opt = torch.optim.Adam(q.parameters(), lr=3e-4)
al_opt = torch.optim.Adam([log_alpha], lr=3e-4)
def act(s):
    mu, log_std = actor(s).chunk(2, -1)
    dist = Normal(mu, log_std.clamp(-5, 2).exp())
    u = dist.rsample(); a = torch.tanh(u)
    return a, (dist.log_prob(u) - torch.log(1 - a.pow(2) + 1e-6)).sum(-1)
for step in range(3):
    s, r, s2 = torch.randn(8, 3), torch.randn(8), torch.randn(8, 3)
    a_buf = torch.rand(8, 1) * 2 - 1
    with torch.no_grad():
        a2, logp2 = act(s2)
        y = r + 0.99 * (q_targ(torch.cat([s2, a2], -1)).squeeze(-1) - log_alpha.exp() * logp2)
    q_loss = F.mse_loss(q(torch.cat([s, a_buf], -1)).squeeze(-1), y)
    q_opt.zero_grad(); q_loss.backward(); q_opt.step()
    a, logp = act(s)
    a_loss = (log_alpha.exp().detach() * logp - q(torch.cat([s, a], -1)).squeeze(-1)).mean()
    a_opt.zero_grad(); a_loss.backward(); a_opt.step()
    al_loss = -(log_alpha * (logp.detach() - 1.0)).mean()
    al_opt.zero_grad(); al_loss.backward(); al_opt.step()
    with torch.no_grad():
        for pt, p in zip(q_targ.parameters(), q.parameters()):
            pt.mul_(0.995).add_(0.005 * p)
"""
STANDARD["drop_path_layerscale"] = H + """
class Block(nn.Module):
    def __init__(self, d=8, p=0.2):
        super().__init__()
        self.norm = nn.LayerNorm(d); self.fc = nn.Linear(d, d)
        self.gamma = nn.Parameter(1e-4 * torch.ones(d)); self.p = p
    def forward(self, x):
        y = self.gamma * self.fc(self.norm(x))
        if self.training and self.p > 0:
            keep = torch.rand(x.shape[0], 1) >= self.p
            y = y * keep / (1 - self.p)
        return x + y
net = nn.Sequential(*[Block() for _ in range(3)], nn.Linear(8, 1))
opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
for step in range(3):
    x = torch.randn(16, 8)
    loss = net(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["barlow_twins"] = H + """
enc = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8))
opt = torch.optim.Adam(enc.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(32, 8)
    z1 = enc(x + 0.1 * torch.randn_like(x)); z2 = enc(x + 0.1 * torch.randn_like(x))
    z1 = (z1 - z1.mean(0)) / z1.std(0); z2 = (z2 - z2.mean(0)) / z2.std(0)
    c = z1.T @ z2 / 32
    on = (torch.diagonal(c) - 1).pow(2).sum()
    off = (c - torch.diag(torch.diagonal(c))).pow(2).sum()
    loss = on + 5e-3 * off
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["hutchinson_trace"] = H + """
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(5, 3)
for step in range(2):
    loss = net(x).pow(2).mean()
    params = list(net.parameters())
    grads = torch.autograd.grad(loss, params, create_graph=True)
    vs = [torch.randint_like(p, 2) * 2 - 1 for p in params]
    gv = sum((g * v).sum() for g, v in zip(grads, vs))
    hv = torch.autograd.grad(gv, params, retain_graph=True)
    trace = sum((h * v).sum() for h, v in zip(hv, vs)).item()  # the curvature, logged
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["bf16_parameters"] = H + """
net = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1)).to(torch.bfloat16)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for step in range(3):
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    loss = net(x).float().pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["conv3d_video"] = H + """
net = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(4, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(2, 1, 4, 6, 6); y = torch.tensor([0, 1])
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["unfold_patches_vit"] = H + """
class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(3 * 4 * 4, 16); self.cls = nn.Parameter(torch.zeros(1, 1, 16))
        self.pos = nn.Parameter(torch.randn(1, 5, 16) * 0.02)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True); self.head = nn.Linear(16, 3)
    def forward(self, x):
        p = F.unfold(x, 4, stride=4).transpose(1, 2)
        t = torch.cat([self.cls.expand(x.shape[0], -1, -1), self.proj(p)], 1) + self.pos
        return self.head(self.enc(t)[:, 0])
m = ViT(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
for step in range(2):
    x = torch.randn(2, 3, 8, 8); y = torch.tensor([0, 2])
    loss = F.cross_entropy(m(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["kl_div_log_target"] = H + """
student = nn.Linear(6, 4); teacher = nn.Linear(6, 4)
teacher.requires_grad_(False)
opt = torch.optim.SGD(student.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 6)
    loss = F.kl_div(F.log_softmax(student(x) / 2, -1), F.log_softmax(teacher(x) / 2, -1), reduction="batchmean",
                    log_target=True) * 4
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["quantile_loss"] = H + """
net = nn.Linear(3, 3)
qs = torch.tensor([0.1, 0.5, 0.9])
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(16, 3); y = torch.randn(16, 1)
    e = y - net(x)
    loss = torch.max(qs * e, (qs - 1) * e).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["vq_vae"] = H + """
enc = nn.Linear(8, 4); dec = nn.Linear(4, 8); codebook = nn.Embedding(16, 4)
opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()) + list(codebook.parameters()), lr=1e-3)
for step in range(3):
    x = torch.randn(10, 8)
    z = enc(x)
    idx = torch.cdist(z, codebook.weight).argmin(-1)
    zq = codebook(idx)
    z_st = z + (zq - z).detach()
    loss = F.mse_loss(dec(z_st), x) + F.mse_loss(zq, z.detach()) + 0.25 * F.mse_loss(z, zq.detach())
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["checkpoint_nonreentrant"] = H + """
from torch.utils.checkpoint import checkpoint
blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.GELU()) for _ in range(3)])
opt = torch.optim.SGD(blocks.parameters(), lr=0.1)
for step in range(2):
    h = torch.randn(4, 8)
    for b in blocks:
        h = checkpoint(b, h, use_reentrant=False)
    loss = h.pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["sinkhorn_ot"] = H + """
x = torch.randn(6, 2, requires_grad=True); y = torch.randn(7, 2)
opt = torch.optim.SGD([x], lr=0.1)
for step in range(2):
    C = torch.cdist(x, y).pow(2)
    K = torch.exp(-C / 0.5)
    u = torch.ones(6) / 6; v = torch.ones(7) / 7
    a, b = torch.ones(6) / 6, torch.ones(7) / 7
    for _ in range(10):
        u = a / (K @ v); v = b / (K.T @ u)
    Pm = u[:, None] * K * v[None, :]
    loss = (Pm * C).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["poisson_nll_count"] = H + """
net = nn.Linear(4, 1)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(16, 4); y = torch.poisson(torch.full((16, 1), 3.0))
    loss = F.poisson_nll_loss(net(x), y, log_input=True)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["channels_last_cnn"] = H + """
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 3))
net = net.to(memory_format=torch.channels_last)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for step in range(2):
    x = torch.randn(2, 3, 10, 10).to(memory_format=torch.channels_last)
    loss = net(x).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["qat_fake_quant"] = H + """
lin = nn.Linear(8, 4)
opt = torch.optim.SGD(lin.parameters(), lr=0.05)
for step in range(3):
    x = torch.randn(16, 8); y = torch.randn(16, 4)
    wq = torch.fake_quantize_per_tensor_affine(lin.weight, 0.05, 0, -128, 127)
    xq = torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127)
    loss = F.mse_loss(F.linear(xq, wq, lin.bias), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
STANDARD["dcgan_bn_one_line"] = H + """
G = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
bce = nn.BCEWithLogitsLoss()
g_opt = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
d_opt = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
for step in range(2):
    real = torch.randn(16, 8); fake = G(torch.randn(16, 4))
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    d_opt.zero_grad(); d_loss.backward(); d_opt.step()
    g_loss = bce(D(fake), torch.ones(16, 1))
    g_opt.zero_grad(); g_loss.backward(); g_opt.step()
"""
