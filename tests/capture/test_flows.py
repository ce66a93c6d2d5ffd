"""torch's own checks folded with their verdicts, checkpoint recomputation shown, and runs cut
by a limit: each against torch's own answer from the same program run bare."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import torch

from gradtrace.capture import native
from programs import DYNAMIC_NET_30000
from rundoc import run_doc

# forward_ad's first make_dual makes torch warn that torch.jit.script is deprecated, bare too
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

KERNELS = [pytest.param(False, id="python")]
if native.available():
    KERNELS.insert(0, pytest.param(True, id="cxx"))

EXP = """import torch
class MyExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y
    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y{wrong}
x = torch.randn(3, dtype=torch.double, requires_grad=True)
{checks}w = torch.randn(3, requires_grad=True)
for i in range(4):
    loss = MyExp.apply(w).sum()
    loss.backward()
print(w.grad)
"""

CHECKS = ("print(torch.autograd.gradcheck(MyExp.apply, (x,)))\n"
          "print(torch.autograd.gradgradcheck(MyExp.apply, (x,)))\n")


def bare(code: str) -> dict[str, Any]:
    """The snippet run without gradtrace, seeded as run_snippet seeds it: its namespace."""
    random.seed(0)
    torch.manual_seed(0)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, "<bare>", "exec"), namespace)
    return namespace


def leaf_grads(doc: dict[str, Any]) -> dict[str, Any]:
    return {n["name"]: n["grad"] for n in doc["graph"]["nodes"]
            if n["kind"] == "tensor" and n["role"] == "leaf" and n["name"] and n["grad"]}


def close(value: dict[str, Any], t: torch.Tensor) -> bool:
    got = torch.tensor(value["values"], dtype=torch.float64)
    return torch.allclose(got, t.detach().double(), rtol=1e-5, atol=1e-6)


def hint_codes(doc: dict[str, Any]) -> list[str]:
    return [h["code"] for h in (doc.get("analysis") or {}).get("hints", [])]


@pytest.mark.parametrize("native_kernels", KERNELS)
def test_gradcheck_is_one_entry_with_its_verdict_and_the_snippets_graph_stays_its_own(
        native_kernels: bool) -> None:
    with_checks = run_doc(EXP.format(wrong="", checks=CHECKS), seed=0, native=native_kernels)
    without = run_doc(EXP.format(wrong="", checks=""), seed=0, native=native_kernels)
    assert with_checks["status"] == "ok"
    folded = with_checks["folded"]
    assert [(f["api"], f["line"], f["verdict"], f["calls"]) for f in folded] == [
        ("torch.autograd.gradcheck", 13, "passed", 1), ("torch.autograd.gradgradcheck", 14, "passed", 1)]
    assert all(f["nodes"] > 0 for f in folded)
    # the user's 4 passes only, and the same graph as the program without the checks
    assert [p["line"] for p in with_checks["passes"]] == [18] * 4
    assert ([n["name"] for n in with_checks["graph"]["nodes"]]
            == [n["name"] for n in without["graph"]["nodes"]])
    ns = bare(EXP.format(wrong="", checks=CHECKS))
    assert with_checks["stdout"] == "True\nTrue\n" + str(ns["w"].grad) + "\n"
    assert close(leaf_grads(with_checks)["w"], ns["w"].grad)
    assert "folded" not in without


@pytest.mark.parametrize("native_kernels", KERNELS)
def test_a_failing_gradcheck_says_failed_with_torchs_message(native_kernels: bool) -> None:
    checks = ("try:\n    torch.autograd.gradcheck(MyExp.apply, (x,))\nexcept Exception as e:\n"
              "    print(type(e).__name__)\n"
              "print(torch.autograd.gradcheck(MyExp.apply, (x,), raise_exception=False))\n")
    code = EXP.format(wrong=" * 1.5", checks=checks)
    ns = bare(code.replace("w.grad)", "w.grad); verdict = torch.autograd.gradcheck("
                           "MyExp.apply, (x,), raise_exception=False)"))
    assert ns["verdict"] is False  # torch's own verdict
    doc = run_doc(code, seed=0, native=native_kernels)
    assert doc["status"] == "ok" and doc["stdout"].startswith("GradcheckError\nFalse\n")
    raised, returned = doc["folded"]
    assert (raised["line"], raised["verdict"]) == (14, "failed")
    assert "Jacobian mismatch" in raised["message"]
    assert (returned["line"], returned["verdict"], returned["message"]) == (17, "failed", None)


def test_an_exception_inside_a_check_is_raised_and_the_run_says_where() -> None:
    code = ("import torch\nx = torch.randn(3, dtype=torch.double, requires_grad=True)\n"
            "torch.autograd.gradcheck(lambda t: t.reshape(7), (x,))\n")
    doc = run_doc(code, seed=0)
    assert doc["status"] == "error" and doc["error"]["line"] == 3
    (entry,) = doc["folded"]
    assert entry["verdict"] == "raised" and entry["message"].startswith("RuntimeError")


def test_a_check_in_a_loop_is_one_entry_counting_its_calls() -> None:
    code = ("import torch\nfor i in range(3):\n    x = torch.randn(2, dtype=torch.double, "
            "requires_grad=True)\n    torch.autograd.gradcheck(torch.sin, (x,))\n")
    doc = run_doc(code, seed=0)
    assert [(f["line"], f["calls"]) for f in doc["folded"]] == [(4, 3)]
    assert doc["passes"] == [] and doc["graph"]["nodes"] == []


def test_near_miss_the_snippets_own_jacobian_is_not_folded() -> None:
    """``torch.autograd.functional.jacobian`` and a hand-written ``autograd.grad`` loop are the
    snippet's computation: recorded as its passes."""
    code = ("import torch\nx = torch.randn(3, requires_grad=True)\n"
            "J = torch.autograd.functional.jacobian(torch.sin, x)\n"
            "y = x * x\nrows = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(3)]\n")
    doc = run_doc(code, seed=0)
    assert "folded" not in doc
    assert sum(p["line"] == 5 for p in doc["passes"]) == 3
    assert any(p["line"] == 3 for p in doc["passes"])


CHECKPOINT = """import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.1), nn.Linear(8, 4))
head = nn.Linear(4, 1)
x = torch.randn(2, 4, requires_grad=True)
for step in range(2):
    h = checkpoint(net, x, use_reentrant={reentrant})
    loss = head(h).sum()
    loss.backward()
"""


@pytest.mark.parametrize("native_kernels", KERNELS)
@pytest.mark.parametrize("reentrant", [True, False])
def test_every_parameter_of_a_checkpointed_net_is_in_the_document_with_torchs_grad(
        native_kernels: bool, reentrant: bool) -> None:
    code = CHECKPOINT.format(reentrant=reentrant)
    doc = run_doc(code, seed=0, native=native_kernels)
    assert doc["status"] == "ok", doc["error"]
    ns = bare(code)
    grads = leaf_grads(doc)
    expected = {**{f"net.{k}": p for k, p in ns["net"].named_parameters()},
                **{f"head.{k}": p for k, p in ns["head"].named_parameters()}, "x": ns["x"]}
    for name, t in expected.items():
        assert t.grad is not None
        # a leftover loop variable may still name one parameter (not this module's concern):
        # then it is found by value among the unnamed ones
        value = grads.get(name)
        if value is None:
            value = next(v for k, v in grads.items() if k not in expected and close(v, t.grad))
        assert close(value, t.grad), name
    assert "train-mode-in-eval" not in hint_codes(doc)
    outer = [p for p in doc["passes"] if "within" not in p]
    assert [p["line"] for p in outer] == [10, 10]
    inner = [p for p in doc["passes"] if "within" in p]
    if reentrant:  # the recomputation's backward, one inside each outer pass
        assert [doc["passes"][p["within"]]["line"] for p in inner] == [10, 10]
    else:
        assert inner == []


def test_near_miss_an_evaluation_beside_a_checkpoint_still_gets_the_train_mode_hint() -> None:
    code = CHECKPOINT.format(reentrant=True) + "with torch.no_grad():\n    print(net(x).shape)\n"
    doc = run_doc(code, seed=0)
    hints = [h for h in doc["analysis"]["hints"] if h["code"] == "train-mode-in-eval"]
    assert [h["line"] for h in hints] == [12]


@pytest.mark.parametrize("native_kernels", KERNELS)
def test_a_run_stopped_in_a_backward_keeps_its_output_says_where_and_no_hint_reads_the_cut(
        native_kernels: bool) -> None:
    doc = run_doc(DYNAMIC_NET_30000, seed=0, max_events=3000, native=native_kernels)
    assert doc["status"] == "graph_limit"
    printed = doc["stdout"].splitlines()
    assert printed and printed[0].startswith("19 ")  # the output up to the stop
    assert "the program was stopped there at line " in doc["message"]
    assert "what it printed until then is kept" in doc["message"]
    assert not {"grad-edited", "graph-kept-alive"} & set(hint_codes(doc))


def test_near_miss_a_graph_kept_alive_in_a_finished_run_is_still_found() -> None:
    code = ("import torch\nw = torch.randn(3, requires_grad=True)\ntotal = 0\n"
            "for i in range(5):\n    total = total + (w * i).sum()\nprint(total.item())\n")
    assert "graph-kept-alive" in hint_codes(run_doc(code, seed=0))


def test_the_polynomial_fit_costs_what_it_writes() -> None:
    """NOTE [what a node costs]: 200 iterations of the tutorial's fit are estimated within a
    quarter of what the document writes (the estimate stays an upper bound)."""
    from gradtrace.capture.session import record
    from rundoc import captured_of

    namespace: dict[str, Any] = {"torch": torch, "math": math}
    code = ("x = torch.linspace(-math.pi, math.pi, 2000)\ny = torch.sin(x)\n"
            "a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))\n"
            "for t in range(200):\n    loss = (a + b * x + c * x ** 2 + d * x ** 3 - y).pow(2).sum()\n"
            "    loss.backward()\n    with torch.no_grad():\n        for p in (a, b, c, d):\n"
            "            p -= 1e-6 * p.grad\n            p.grad = None\n")
    rec = record(_filename="<fit>", _namespace=namespace, _fresh=True)
    import linecache
    linecache.cache["<fit>"] = (len(code), None, code.splitlines(True), "<fit>")
    with rec:
        exec(compile(code, "<fit>", "exec"), namespace)
    _, body = captured_of(rec).canonical_with_id()
    fixed = 512 << 10
    estimate = rec.recorder.size_estimate - fixed
    assert len(body) - 64_000 <= estimate <= 1.25 * len(body)


FORWARD_AD = """import torch
import torch.autograd.forward_ad as fwAD
primal = torch.randn(4)
tangent = torch.randn(4)
w = torch.randn(4, requires_grad=True)
def fn(x, y):
    return x ** 2 + y.sin()
with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input, primal)
    scaled = dual_output * w
    jvp = fwAD.unpack_dual(dual_output).tangent
    jvp_scaled = fwAD.unpack_dual(scaled).tangent
print(jvp)
scaled.sum().backward()
"""


def values(tv: dict[str, Any]) -> torch.Tensor:
    return torch.tensor(tv["values"], dtype=torch.float64)


@pytest.mark.parametrize("native_kernels", KERNELS)
def test_forward_ad_is_a_forward_pass_carrying_torchs_tangents(native_kernels: bool) -> None:
    doc = run_doc(FORWARD_AD, seed=0, native=native_kernels)
    assert doc["status"] == "ok"
    ns = bare(FORWARD_AD)
    assert doc["stdout"] == f"{ns['jvp']}\n"
    steps = doc["tangents"]
    assert [(s["op"], s["line"], s["inputs"]) for s in steps] == [
        ("make_dual", 9, []), ("pow", 7, [0]), ("add", 7, [1]), ("mul", 11, [2])]
    by_name = {s["name"]: s for s in steps if s["name"]}
    assert set(by_name) == {"dual_input", "dual_output", "scaled"}
    # torch's own tangents (unpack_dual) and primals
    assert torch.allclose(values(by_name["dual_input"]["tangent"]), ns["tangent"].double())
    assert torch.allclose(values(by_name["dual_output"]["tangent"]), ns["jvp"].double(), rtol=1e-5)
    assert torch.allclose(values(by_name["scaled"]["tangent"]), ns["jvp_scaled"].double(), rtol=1e-5)
    assert torch.allclose(values(by_name["dual_output"]["primal"]),
                          (ns["primal"] ** 2 + ns["primal"].sin()).double(), rtol=1e-5)
    # the call that also made a backward node (w requires grad) names it; the others made none
    node = by_name["scaled"]["node"]
    assert next(n for n in doc["graph"]["nodes"] if n["id"] == node)["name"] == "MulBackward0"
    assert [s["node"] for s in steps[:3]] == [None, None, None]
    assert [p["line"] for p in doc["passes"]] == [15]


def test_near_miss_no_dual_level_no_tangents_and_unpacking_makes_no_step() -> None:
    plain = run_doc("import torch\nx = torch.randn(3, requires_grad=True)\n(x * 2).sum().backward()\n")
    assert "tangents" not in plain
    code = ("import torch\nimport torch.autograd.forward_ad as fwAD\nx = torch.randn(3)\n"
            "with fwAD.dual_level():\n    d = fwAD.make_dual(x, torch.ones(3))\n"
            "    p, t = fwAD.unpack_dual(d)\n    q = p * 2\n")
    doc = run_doc(code, seed=0)
    assert [s["op"] for s in doc["tangents"]] == ["make_dual"]  # p is the primal: no tangent


FUNC = """import torch
from torch.func import grad, jacrev, jvp, vmap
w = torch.randn(3, requires_grad=True)
x = torch.randn(3)
def f(t):
    return (t.sin() * w).sum()
g = grad(f)(x)
J = jacrev(torch.sin)(x)
out, t = jvp(torch.sin, (x,), (torch.ones(3),))
b = vmap(torch.mul)(x, w)
loss = (g * w).sum() + b.sum()
loss.backward()
print(w.grad)
"""


@pytest.mark.parametrize("native_kernels", KERNELS)
def test_torch_func_transforms_name_their_leaves_and_lines(native_kernels: bool) -> None:
    doc = run_doc(FUNC, seed=0, native=native_kernels)
    assert doc["status"] == "ok" and doc["stdout"] == f"{bare(FUNC)['w'].grad}\n"
    leaves = [n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"]
    # the transforms' own leaves are functorch wrappers of x: named by what they wrap
    assert sorted(n["name"] for n in leaves) == ["w", "x", "x"]
    assert all(n["line"] is not None for n in doc["graph"]["nodes"] if n["kind"] == "function")
    assert close(leaf_grads(doc)["w"], bare(FUNC)["w"].grad)


_DROPOUT_NET = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
                "net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))\n"
                "opt = torch.optim.Adam(net.parameters(), lr=1e-3)\nx, y = torch.randn(16, 4), torch.randn(16, 1)\n")


def test_monte_carlo_dropout_put_in_training_after_the_loop_gets_no_train_mode_hint() -> None:
    """``net.train()`` after the last backward and before sampling under ``no_grad``: dropout
    on at evaluation is the point (Monte Carlo dropout)."""
    code = _DROPOUT_NET + ("for step in range(2):\n    loss = F.mse_loss(net(x), y)\n    opt.zero_grad()\n"
                           "    loss.backward()\n    opt.step()\nnet.train()\nwith torch.no_grad():\n"
                           "    samples = torch.stack([net(x[:4]) for _ in range(5)])\n")
    assert "train-mode-in-eval" not in hint_codes(run_doc(code, seed=0))


def test_near_miss_a_loops_train_call_before_its_backward_still_gets_the_train_mode_hint() -> None:
    code = _DROPOUT_NET + ("for step in range(2):\n    net.train()\n    loss = F.mse_loss(net(x), y)\n"
                           "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    with torch.no_grad():\n"
                           "        val = net(x[:4]).mean()\n")
    hints = [h for h in run_doc(code, seed=0)["analysis"]["hints"] if h["code"] == "train-mode-in-eval"]
    assert [h["line"] for h in hints] == [15]
