"""The Python twin's output tap (capture/tapkernel.py) changes nothing a program does and holds
what the C++ core's holds: programs that build ``nn.Parameter``s and ``__torch_function__``
subclasses (``detach`` and ``alias`` pass by the tap's key), run their own dispatch mode, use
forward-mode AD, or hand Python numbers to ops (wrapped numbers) print what their bare run
prints, and give the same document and tensor file on both kernel sets. An operator defined
after the tap's kernels were registered works too, under a dispatch mode included."""

from __future__ import annotations

import contextlib
import io
import uuid
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import gradtrace
from gradtrace.capture import native, tapkernel
from rundoc import run_captured

# forward_ad's first make_dual makes torch warn that torch.jit.script is deprecated, bare too
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

SUBCLASS = """import torch
from torch import nn
class Tagged(torch.Tensor):
    pass
w = nn.Parameter(torch.randn(3, 4))
b = nn.Buffer(torch.zeros(4))
x = torch.randn(2, 3, requires_grad=True)
t = (x @ w).as_subclass(Tagged)
y = (t * 2 + b).t().reshape(8)
print(type(t).__name__, type(y).__name__, y.grad_fn.name())
y.sum().backward()
print(x.grad.sum().item() != 0, w.grad.shape)
"""

OWN_MODE = """import torch
from torch.utils._python_dispatch import TorchDispatchMode
class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))
x = torch.randn(4, 6, requires_grad=True)
with Count() as c:
    y = (x * 2).t().reshape(6, 2, 2)
print(y.grad_fn.name(), c.ops)
y.sum().backward()
print(x.grad.sum().item())
"""

FORWARD_AD = """import torch
import torch.autograd.forward_ad as fwad
x = torch.randn(3, requires_grad=True)
y = (x * 3).t().reshape(3)
with fwad.dual_level():
    d = fwad.make_dual(torch.randn(3), torch.ones(3))
    e = (d * y).sin()
    print(fwad.unpack_dual(e).tangent is not None)
(y * y).sum().backward()
print(x.grad)
"""

NUMBERS = """import torch
x = torch.randn(4, requires_grad=True)
i = torch.arange(4)
h = torch.ones((), dtype=torch.float16)
print((i * 0.5).dtype, (h * 2.5).dtype, (h + 1).dtype, (2 - i).dtype, torch.where(i > 1, i, 0.5).dtype)
print(torch.where(x > 0, x, 0.1).dtype, (x.double() * 0.1).sum().item())
y = torch.where(x > 0, x * 3, 0.5).sqrt() / 7
y.sum().backward()
print(x.grad)
"""

PROGRAMS = {"subclass": SUBCLASS, "own-mode": OWN_MODE, "forward-ad": FORWARD_AD, "numbers": NUMBERS}


def _bare(code: str) -> str:
    out = io.StringIO()
    torch.manual_seed(0)
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<snippet>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


@pytest.mark.parametrize("code", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_the_twin_runs_the_bare_program_and_holds_what_the_core_holds(code: str) -> None:
    bare = _bare(code)
    runs = {}
    for kernels, is_native in (("core", True), ("python", False)):
        if is_native and native.core is None:
            continue
        cap = run_captured(code, native=is_native, tensor_budget=64 << 20, seed=0)
        assert cap.status == "ok", (kernels, cap.fields.get("error"))
        assert cap.fields["stdout"] == bare, kernels
        assert cap.tensors is not None
        runs[kernels] = cap
    if "core" not in runs:
        pytest.skip("the C++ core is not built on this machine: nothing to compare the twin with")
    core, twin = runs["core"], runs["python"]
    assert core.graph == twin.graph
    assert core.events == twin.events
    assert core.tensors == twin.tensors


def _scale_op(name: str) -> Any:
    @torch.library.custom_op(name, mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        return x * 3

    scale.register_autograd(lambda ctx, g: g * 3)
    return scale


class _Seen(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.ops.append(func.name())
        return func(*args, **(kwargs or {}))


def test_operators_defined_later_are_tapped_and_run_under_a_dispatch_mode() -> None:
    """Operators defined after the tap's kernels were registered, between blocks and inside
    one, have a kernel of their own when they run: under a dispatch mode (which makes torch
    look the kernel up per operator) they run as in a bare run, and what they make is held."""
    with gradtrace.record(native=False, tensor_budget=1 << 20):
        torch.ones(1)  # the kernels are registered
    tag = uuid.uuid4().hex[:8]
    between = _scale_op(f"twin_{tag}::between")
    x = torch.randn(3, requires_grad=True)
    for block in range(2):
        with gradtrace.record(native=False, tensor_budget=1 << 20) as rec:
            inside = _scale_op(f"twin_{tag}::inside{block}")  # a snippet's own custom op
            with _Seen() as seen:
                y = inside(between(x * 2))
            y.sum().backward()
        assert {f"twin_{tag}::between", f"twin_{tag}::inside{block}"} <= set(seen.ops)
        assert torch.equal(x.grad, torch.full((3,), 18.0 * (block + 1)))
        doc = rec.document()
        names = {n.name for n in doc.graph.nodes if n.kind == "function" and n.output and n.output[0].key}
        for op in ("between", f"inside{block}"):  # each custom op's output is in the file
            assert f"GeneratedBackwardFor_twin_{tag}_{op}_defaultBackward" in names, names
        assert f"twin_{tag}::inside{block}" in tapkernel._registered


def test_an_operator_registered_past_torch_library_runs_through_the_fallback_then_its_own_kernel() -> None:
    """An operator defined without ``Library.define`` (as a C++ extension's are) runs through
    the key's fallback in its first block, and has its own kernel from the next block on."""
    with gradtrace.record(native=False, tensor_budget=1 << 20):
        torch.ones(1)  # the kernels are registered
    ns = f"twin_raw_{uuid.uuid4().hex[:8]}"
    lib = torch.library.Library(ns, "DEF")  # type: ignore[no-untyped-call]
    lib.m.define("double(Tensor x) -> Tensor", "", ())  # past Library.define
    lib.impl("double", lambda x: x * 2, "CompositeImplicitAutograd")
    op = getattr(torch.ops, ns).double
    x = torch.randn(3, requires_grad=True)
    with gradtrace.record(native=False, tensor_budget=1 << 20) as rec:
        y = op(x)
    assert f"{ns}::double" in tapkernel._late and f"{ns}::double" not in tapkernel._registered
    assert torch.equal(y, x * 2) and y.grad_fn.name() == "MulBackward0"
    assert any(n.output and n.output[0].key for n in rec.document().graph.nodes if n.name == "MulBackward0")
    with gradtrace.record(native=False, tensor_budget=1 << 20), _Seen() as seen:
        z = op(x)
    assert f"{ns}::double" in tapkernel._registered
    assert torch.equal(z, x * 2) and "aten::mul.Tensor" in seen.ops  # it decomposes above the mode
