"""Tutorial-style programs that recording must leave exactly as they run bare
(tests/capture/test_faithful.py): the patterns of PyTorch's "Extending PyTorch" notes, saved
tensor hooks, MaskedTensor, torch.func, tensors of every kind and torch.compile.

Each program runs as a snippet does: ``torch``, ``nn`` and ``F`` predefined, seeded with 0. It
prints what it computed; the test also compares every tensor and gradient it leaves in its
namespace.
"""

from __future__ import annotations

PROGRAMS: dict[str, str] = {}

PROGRAMS["fn_plain_mul_constant"] = '''
from torch.autograd import Function

class MulConstant(Function):
    @staticmethod
    def forward(tensor, constant):
        return tensor * constant

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, constant = inputs
        ctx.constant = constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None

x = torch.randn(3, requires_grad=True)
y = MulConstant.apply(x, 5.5)
y.sum().backward()
print(y, x.grad)
'''

PROGRAMS["fn_save_for_backward_linear"] = '''
from torch.autograd import Function

class LinearFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias

linear = LinearFunction.apply
inp = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
weight = torch.randn(2, 3, dtype=torch.double, requires_grad=True)
bias = torch.randn(2, dtype=torch.double, requires_grad=True)
out = linear(inp, weight, bias)
out.pow(2).sum().backward()
print(out.grad_fn.name(), inp.grad.shape, weight.grad, bias.grad)
'''

PROGRAMS["fn_mark_dirty"] = '''
class AddOneInplace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output

a = torch.randn(3, requires_grad=True)
b = a.clone()
c = AddOneInplace.apply(b)
(c * c).sum().backward()
print(c is b, b.grad_fn.name(), a.grad)
'''

PROGRAMS["fn_non_differentiable_once_differentiable"] = '''
from torch.autograd.function import once_differentiable

class SortFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return values, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_values, grad_idx):
        x, idx = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        grad_input.index_add_(0, idx, grad_values)
        return grad_input

x = torch.randn(5, requires_grad=True)
values, idx = SortFn.apply(x)
(values * torch.arange(5.0)).sum().backward()
print(idx.requires_grad, values, x.grad)
'''

PROGRAMS["fn_set_materialize_grads"] = '''
from torch.autograd.function import once_differentiable

class SimpleFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x.clone(), x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, g1, g2):
        x, = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        if g1 is not None:
            grad_input += g1
        if g2 is not None:
            grad_input += g2
        print("got", g1 is None, g2 is None)
        return grad_input

a = torch.tensor([1.0, 2.0], requires_grad=True)
out, _ = SimpleFunc.apply(a)
out.sum().backward()
print(a.grad)
'''

PROGRAMS["fn_double_backward"] = '''
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x

x = torch.rand(3, 3, requires_grad=True, dtype=torch.double)
y = Square.apply(x)
g, = torch.autograd.grad(y.sum(), x, create_graph=True)
g.sum().backward()
print(g, x.grad)
'''

PROGRAMS["fn_clear_saved_tensors_on_access"] = '''
class TwoMatmuls(torch.autograd.Function):
    clear_saved_tensors_on_access = True

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return a @ b @ c

    @staticmethod
    def backward(ctx, grad):
        a, b, c = ctx.saved_tensors
        return grad @ (b @ c).T, a.T @ grad @ c.T, (a @ b).T @ grad

a, b, c = (torch.randn(2, 2, requires_grad=True) for _ in range(3))
y = TwoMatmuls.apply(a, b, c)
y.sum().backward()
print(a.grad, b.grad, c.grad)
'''

PROGRAMS["fn_setup_context_vmap"] = '''
class MyCube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        result = x ** 3
        dx = 3 * x ** 2
        return result, dx

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        result, dx = output
        ctx.save_for_backward(x, dx)

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        return grad_output * dx + grad_dx * 6 * x

def my_cube(x):
    result, _ = MyCube.apply(x)
    return result

x = torch.randn(3)
print(torch.func.vmap(torch.func.grad(my_cube))(x))
w = torch.randn(3, requires_grad=True)
my_cube(w).sum().backward()
print(w.grad)
'''

PROGRAMS["saved_tensors_hooks"] = '''
def pack_hook(t):
    print("Packing", list(t.shape))
    return t

def unpack_hook(t):
    print("Unpacking", list(t.shape))
    return t

a = torch.ones(5, requires_grad=True)
b = (torch.ones(5) * 2).requires_grad_()
with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
    y = a * b
y.sum().backward()
print(a.grad)
with torch.autograd.graph.save_on_cpu(pin_memory=False):
    z = (a.exp() * b).sum()
z.backward()
print(a.grad, b.grad)
'''

PROGRAMS["masked_tensor_where"] = '''
from torch.masked import masked_tensor

x = torch.tensor([-10., -5, 0, 5, 10, 50, 60, 70, 80, 90, 100], requires_grad=True)
mask = x < 0
mx = masked_tensor(x, mask, requires_grad=True)
my = masked_tensor(torch.ones_like(x), ~mask, requires_grad=True)
y = torch.where(mask, torch.exp(mx), my)
s = y.sum()
s.backward()
print(mx.grad)
print(my.grad)
'''

PROGRAMS["masked_tensor_gradients"] = '''
from torch.masked import masked_tensor

data = torch.arange(6, dtype=torch.float).reshape(2, 3)
mask = torch.tensor([[True, False, True], [False, True, True]])
mt = masked_tensor(data, mask, requires_grad=True)
y = (mt * 2).exp()
out = y.sum()
out.backward()
print(mt.grad)
'''

PROGRAMS["torch_func_transforms"] = '''
from torch.func import grad, jacrev, vmap, hessian, functional_call

def f(x):
    return (x.sin() * x).sum()

x = torch.randn(4)
print(grad(f)(x))
print(vmap(grad(f))(torch.randn(2, 4)))
print(jacrev(torch.sin)(x))
print(hessian(f)(x).diagonal())
model = nn.Linear(3, 2)
params = dict(model.named_parameters())
def loss(p, inp):
    return functional_call(model, p, (inp,)).pow(2).sum()
inp = torch.randn(3)
g = grad(loss)(params, inp)
print({k: v.shape for k, v in g.items()})
loss(params, inp).backward()
print(torch.allclose(model.weight.grad, g["weight"]))
'''

PROGRAMS["functional_call_stacked_ensemble"] = '''
# the model-ensembling tutorial's pattern: each model's parameters a slice of a stacked tensor
# (a non-leaf in the parameters' place during the call, whose .grad torch warns about reading)
from torch.func import functional_call, stack_module_state
models = [nn.Linear(4, 1) for _ in range(3)]
params, buffers = stack_module_state(models)
base = nn.Linear(4, 1)
x = torch.randn(5, 4)
outs = [functional_call(base, ({k: v[i] for k, v in params.items()}, {}), (x,)) for i in range(3)]
torch.stack(outs).pow(2).mean().backward()
weights = params["weight"]
print(weights.grad)
'''

PROGRAMS["optimizer_in_backward"] = '''
# PyTorch's tutorial on fusing the optimizer step into the backward pass: one Adam per
# parameter, stepped and zeroed by a post-accumulate-grad hook inside backward
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer_dict = {p: torch.optim.Adam([p], lr=1e-2) for p in model.parameters()}
def optimizer_hook(parameter) -> None:
    optimizer_dict[parameter].step()
    optimizer_dict[parameter].zero_grad()
for p in model.parameters():
    p.register_post_accumulate_grad_hook(optimizer_hook)
x, y = torch.randn(16, 8).requires_grad_(), torch.randn(16, 1)
for step in range(3):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
print(loss.item(), [p.grad for p in model.parameters()], model[0].weight[0], x.grad.norm())
'''

PROGRAMS["kinds_nested_jagged"] = '''
a = torch.randn(2, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
nt = torch.nested.as_nested_tensor([a, b], layout=torch.jagged)
y = nt.sin() * 2
s = sum(t.sum() for t in y.unbind())
s.backward()
print(s, a.grad, b.grad)
'''

PROGRAMS["kinds_nested_strided"] = '''
a = torch.randn(2, 3, requires_grad=True)
b = torch.randn(4, 3, requires_grad=True)
nt = torch.nested.as_nested_tensor([a, b])
y = nt * 2
p = y.to_padded_tensor(0.0)
p.sum().backward()
print(p.shape, a.grad, b.grad)
'''

PROGRAMS["kinds_sparse_complex_meta"] = '''
i = torch.tensor([[0, 1, 1], [2, 0, 2]])
v = torch.tensor([3.0, 4.0, 5.0], requires_grad=True)
s = torch.sparse_coo_tensor(i, v, (2, 3))
torch.sparse.mm(s, torch.ones(3, 2)).sum().backward()
print(v.grad)
z = torch.randn(3, dtype=torch.cfloat, requires_grad=True)
(z * z.conj()).real.sum().backward()
print(z.grad)
m = torch.empty(3, device="meta", requires_grad=True)
(m * 2).sum().backward()
print(m.grad.shape, m.grad.device)
'''

PROGRAMS["warnings_from_torch_calls"] = '''
x = torch.randn(2, 3, requires_grad=True)
y = F.softmax(x)
z = F.softmax(x * 2)
y.sum().backward()
print(x.grad.shape)
'''

PROGRAMS["warnings_from_grad_reads"] = '''
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * 3
(h ** 2).sum().backward()
print(h.grad, x.grad)  # torch warns: h is not a leaf
w = torch.randn(3, requires_grad=True)
w.backward(torch.ones(3))
print(w.grad)
'''

# the ordinary training programs of tests/standard_programs.py (each seeds itself): recording
# leaves every parameter, gradient and optimizer state they end with as the bare run's
from standard_programs import STANDARD  # noqa: E402

PROGRAMS["views_changed_under_no_grad"] = '''
# NOTE [a view's grad_fn read after an in-place change] in capture/gradfn.py: a view of a
# parameter made and changed under no_grad (nn.Embedding's padding row), named or not, and one
# the program goes on to use
emb = nn.Embedding(10, 4, padding_idx=0)
w = nn.Parameter(torch.randn(5, 3))
with torch.no_grad():
    w[0].fill_(0)
    v = w[1:3]
    v.mul_(2)
    print(v.sum())
del v  # (reading a changed no_grad view's grad_fn raises: the test's own look at the namespace would)
loss = (emb(torch.tensor([0, 3, 0])).sum() + (w * 2).sum())
loss.backward()
print(emb.weight.grad[0], w.grad)
'''

PROGRAMS.update({f"std_{name}": code for name, code in STANDARD.items()})

COMPILED: dict[str, str] = {}

COMPILED["compile_module"] = '''
model = nn.Linear(2, 2)
cm = torch.compile(model, backend="aot_eager")
x = torch.randn(3, 2)
y = cm(x).sum()
y.backward()
print(type(cm).__name__, y.grad_fn.name(), model.weight.grad)
'''

COMPILED["module_compile_method"] = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x).relu().sum()

net = Net()
net.compile(backend="aot_eager")
seq = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
seq.compile(backend="aot_eager")
x = torch.randn(4, 3)
out = net(x) + seq(x).sum()
out.backward()
print(out.grad_fn.name(), net.fc.weight.grad, seq[0].bias.grad)
'''

COMPILED["graph_break_called_twice"] = '''
@torch.compile(backend="aot_eager")
def f(x):
    h = x.sin()
    print("graph break")
    return h.norm()

x = torch.randn(3, requires_grad=True)
a = f(x)
b = f(x)
(a + b).backward()
print(a, b, x.grad)
'''

COMPILED["recompile_on_shape_change"] = '''
@torch.compile(backend="aot_eager")
def g(x):
    return (x.sin() * 2).sum()

a = torch.randn(3, requires_grad=True)
b = torch.randn(5, requires_grad=True)
g(a).backward()
g(b).backward()
print(a.grad, b.grad)
'''

SERVICE = ("fn_clear_saved_tensors_on_access", "saved_tensors_hooks", "masked_tensor_gradients",
           "kinds_nested_jagged", "kinds_nested_strided", "warnings_from_torch_calls", "warnings_from_grad_reads",
           *COMPILED)
"""The programs also run through the service (its sandbox), against the same bare run."""

INDUCTOR = '''
f = torch.compile(lambda x: (x.sin() * 2).sum())
a = torch.randn(3, requires_grad=True)
f(a).backward()
print(a.grad)
'''
"""The default backend, which cannot run in the sandbox."""

PROGRAMS["default_dtype_float64"] = '''
# the default dtype set to float64 for the run (and set back: the programs share a process)
torch.set_default_dtype(torch.float64)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
print(loss.item(), model[0].weight.dtype)
w = model[0].weight
torch.set_default_dtype(torch.float32)
'''

PROGRAMS["jit_trace_trained"] = '''
# NOTE [the tap unseen by the JIT tracer] in capture/tapkernel.py: trace's check runs it twice
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
traced = torch.jit.trace(model, torch.randn(2, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for step in range(2):
    opt.zero_grad()
    loss = ((traced(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
w = model[0].weight
print(loss.item())
'''

PROGRAMS["checkpoint_sequential"] = '''
from torch.utils.checkpoint import checkpoint_sequential
model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)])
x = torch.randn(5, 8, requires_grad=True)
out = checkpoint_sequential(model, 2, x, use_reentrant=False)
out.sum().backward()
print(x.grad.norm(), model[0][0].weight.grad.norm())
'''

PROGRAMS["global_module_hooks"] = '''
from torch.nn.modules.module import register_module_forward_hook, register_module_full_backward_hook
seen = []
h1 = register_module_forward_hook(lambda m, i, o: seen.append(type(m).__name__))
h2 = register_module_full_backward_hook(lambda m, gi, go: seen.append("bw " + type(m).__name__))
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
x = torch.randn(2, 3, requires_grad=True)
model(x).sum().backward()
h1.remove(); h2.remove()
print(seen, x.grad)
'''

PROGRAMS["gradcheck_then_anomaly_mode"] = '''
def f(a, b):
    return (a * b.sin()).sum()
a = torch.randn(3, dtype=torch.float64, requires_grad=True)
b = torch.randn(3, dtype=torch.float64, requires_grad=True)
print(torch.autograd.gradcheck(f, (a, b)))
with torch.autograd.detect_anomaly():
    f(a, b).backward()
print(a.grad, b.grad)
'''

PROGRAMS["thread_pool_forward"] = '''
from concurrent.futures import ThreadPoolExecutor
model = nn.Linear(4, 1)
xs = [torch.randn(3, 4) for _ in range(4)]
with ThreadPoolExecutor(2) as pool:
    outs = list(pool.map(model, xs))
loss = sum(o.sum() for o in outs)
loss.backward()
w = model.weight
print(w.grad)
'''

PROGRAMS["mha_fast_path_then_training"] = '''
mha = nn.MultiheadAttention(16, 4, batch_first=True)
x = torch.randn(2, 5, 16)
mha.eval()
with torch.no_grad():
    out, _ = mha(x, x, x, need_weights=False)
print(out.sum())
mha.train()
out2, w = mha(x, x, x)
out2.sum().backward()
q = mha.in_proj_weight
print(q.grad.norm(), w.shape)
'''

PROGRAMS["encoder_nested_fast_path_then_training"] = '''
layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)
x = torch.randn(3, 6, 16)
mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2, [False] * 2 + [True] * 4])
enc.eval()
with torch.no_grad():
    y = enc(x, src_key_padding_mask=mask)
print(y[0].sum(), y[1, :4].sum())
enc.train()
z = enc(x, src_key_padding_mask=mask)
z[~mask].sum().backward()
w = enc.layers[0].linear1.weight
print(w.grad.norm())
'''

PROGRAMS["half_model_on_cpu"] = '''
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).half()
x = torch.randn(6, 4).half()
loss = model(x).float().pow(2).mean()
loss.backward()
w = model[0].weight
print(loss, w.grad.dtype, w.grad.float().norm())
'''

PROGRAMS["ema_deepcopy_save_load"] = '''
import copy, io
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(8, 4), torch.randn(8, 1)
ema = copy.deepcopy(model)
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters()):
            pe.mul_(0.9).add_(pm, alpha=0.1)
buf = io.BytesIO()
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
buf.seek(0)
state = torch.load(buf, weights_only=True)
clone = copy.deepcopy(model)
clone.load_state_dict(state["model"])
w = model[0].weight
print(loss.item(), torch.equal(clone[0].weight, w), ema[0].weight.sum(), sorted(state["opt"]["state"]))
'''

PROGRAMS["distributions_rsample_kl"] = '''
from torch.distributions import Normal, kl_divergence
mu = torch.zeros(3, requires_grad=True)
log_sigma = torch.zeros(3, requires_grad=True)
q = Normal(mu, log_sigma.exp())
z = q.rsample((5,))
kl = kl_divergence(q, Normal(torch.zeros(3), torch.ones(3))).sum()
loss = (z ** 2).mean() + kl
loss.backward()
print(loss, mu.grad, log_sigma.grad)
'''

PROGRAMS["forward_mode_ad"] = '''
import torch.autograd.forward_ad as fwAD
x = torch.randn(4, requires_grad=True)
v = torch.randn(4)
with fwAD.dual_level():
    dual = fwAD.make_dual(x, v)
    out = (dual.sin() * dual).sum()
    jvp = fwAD.unpack_dual(out).tangent
out.backward()
print(jvp, x.grad)
'''

PROGRAMS["saved_tensors_packed_to_disk"] = '''
import os, tempfile, uuid
tmp = tempfile.mkdtemp()
def pack(t):
    name = os.path.join(tmp, str(uuid.uuid4()))
    torch.save(t, name)
    return name
def unpack(name):
    return torch.load(name, weights_only=True)
x = torch.randn(5, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x.pow(2).sin()
y.sum().backward()
print(x.grad)
'''

PROGRAMS["node_hooks_and_prehooks"] = '''
x = torch.randn(3, requires_grad=True)
y = x.exp()
z = y * 2
seen = []
h1 = z.grad_fn.register_hook(lambda gi, go: seen.append(("post", [g.shape for g in gi if g is not None])))
h2 = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
z.sum().backward()
print(seen, x.grad)
'''

PROGRAMS["multi_grad_hook"] = '''
a = torch.randn(3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
got = []
torch.autograd.graph.register_multi_grad_hook((a, b), lambda grads: got.append([g is None for g in grads]))
(a * b).sum().backward()
(a * 2).sum().backward()
print(got, a.grad, b.grad)
'''

PROGRAMS["mutation_on_saved_tensors_allowed"] = '''
with torch.autograd.graph.allow_mutation_on_saved_tensors():
    a = torch.randn(4, requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()
    out.backward()
    print(a.grad)
'''

PROGRAMS["optimizer_step_hooks_of_the_user"] = '''
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
log = []
opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
opt.register_step_post_hook(lambda o, a, k: log.append("post"))
for step in range(2):
    opt.zero_grad()
    model(torch.randn(4, 3)).pow(2).mean().backward()
    opt.step()
w = model.weight
print(log, w.grad)
'''

PROGRAMS["anomaly_mode_backward_raises"] = '''
# NOTE [anomaly mode's tracebacks without the recorder] in capture/anomaly.py
x = torch.tensor([0.0, 1.0], requires_grad=True)
with torch.autograd.detect_anomaly():
    y = (x.sqrt() * 0).sum()
    try:
        y.backward()
    except RuntimeError as e:
        print("raised:", str(e).splitlines()[0])
w = torch.ones(2, requires_grad=True)
(w * 3).sum().backward()
'''

PROGRAMS["versions_and_graph_walk"] = '''
# recording bumps no version and adds no node: what a program reads of its graph is the bare run's
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(5, 3, requires_grad=True)
for step in range(2):
    opt.zero_grad()
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward(retain_graph=True)
    opt.step()
w = model[0].weight
def walk(fn, depth=0):
    if fn is None or depth > 6:
        return []
    return [type(fn).__name__] + [n for f, _ in fn.next_functions for n in walk(f, depth + 1)]
print(w._version, x._version, loss.grad_fn.name(), walk(loss.grad_fn))
print([p._version for p in model.parameters()], w.grad._version)
'''

PROGRAMS["anomaly_mode_check_nan_raises"] = '''
x = torch.tensor([-1.0, 4.0], requires_grad=True)
with torch.autograd.set_detect_anomaly(True, check_nan=True):
    y = torch.where(x > 0, x.sqrt(), torch.zeros_like(x)).sum()
    try:
        y.backward()
    except RuntimeError as e:
        print("raised:", str(e).splitlines()[0])
w = torch.ones(2, requires_grad=True)
(w * 3).sum().backward()
'''

# NOTE [the recorder's ops unseen] in capture/unseen.py: a program that profiles itself
# counts its own ops only; the recorder's copies of leaves, gradients and saved parameters,
# and its value steps' views, are not among them
PROGRAMS["profiler_op_counts_backward"] = '''
from torch.profiler import profile, ProfilerActivity
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
x = torch.randn(4, 8)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    loss = model(x).pow(2).mean()
    loss.backward()
counts = {e.key: e.count for e in prof.key_averages()}
print(sorted(counts.items()))
'''

PROGRAMS["profiler_op_counts_training_loop"] = '''
from torch.profiler import profile, record_function, ProfilerActivity
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), 1e-2)
x, y = torch.randn(32, 4), torch.randn(32, 1)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for step in range(3):
        with record_function("train_step"):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
table = prof.key_averages(group_by_input_shape=True)
print(sorted((e.key, e.count, str(e.input_shapes)) for e in table))
print(sum(e.count for e in prof.events() if e.name == "aten::clone"))
'''

PROGRAMS["flop_counter_training_step"] = '''
from torch.utils.flop_counter import FlopCounterMode
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(4, 8)
counter = FlopCounterMode(display=False)
for step in range(2):
    with counter:
        opt.zero_grad()
        loss = F.mse_loss(model(x), torch.zeros(4, 1))
        loss.backward()
        opt.step()
    print(counter.get_total_flops(), sorted((m, sorted((str(k), v) for k, v in c.items()))
                                            for m, c in counter.get_flop_counts().items()))
'''
