"""The first NaN of the forward pass is blamed on the op that made it from NaN-free inputs
(NOTE [forward producer from the kept outputs] in ``analysis/nonfinite/forward.py``), checked
against torch's own values in a bare run, not against ``detect_anomaly``, which names the
backward node where the NaN shows; and nothing is blamed on the lessons or on standard
practice (an attention mask of ``-inf``, an inf that ``torch.where`` drops)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from capture.tensor_oracle import recorded_run
from capture.test_tensor_oracle import GPT_LIKE, LESSONS
from gradtrace.analysis.run import analyze

INF_MINUS_INF = """import torch
x = torch.tensor([1000.0, 1.0], requires_grad=True)
a = torch.exp(x)
b = a - a
c = b * 2 + 1
loss = c.sum()
loss.backward()
"""
PROGRAMS = {
    "inf minus inf": INF_MINUS_INF,
    "zero over zero": "import torch\nx = torch.tensor([0.0, 2.0], requires_grad=True)\ny = x * 1\n"
                      "r = (y / x).tanh()\nr.sum().backward()\n",
    "log of a negative": "import torch\nw = torch.tensor([1.0, -3.0], requires_grad=True)\nh = w * 2\n"
                         "loss = torch.log(h).mean()\nloss.backward()\n",
    "softmax of a masked row": "import torch\nq = torch.randn(2, 3, requires_grad=True)\n"
                               "pad = torch.tensor([[False, False, False], [True, True, True]])\n"
                               "s = q.masked_fill(pad, float('-inf'))\na = torch.softmax(s, dim=-1)\n"
                               "a.sum().backward()\n",
    "sqrt of a negative": "import torch\nx = torch.tensor([2.0, 0.5], requires_grad=True)\nd = x - 1\n"
                          "r = torch.sqrt(d)\nr.sum().backward()\n",
    "inf over inf": "import torch\nx = torch.tensor([50.0, 100.0], requires_grad=True)\ne = torch.exp(x * 2)\n"
                    "p = e / e.sum()\np[0].backward()\n",
    "acos past one": "import torch\na = torch.tensor([0.6, 0.8], requires_grad=True)\nb = torch.tensor([0.6, 0.8])\n"
                     "c = (a * b).sum() / (a.norm() * b.norm()) * 1.0000001\nang = torch.acos(c)\nang.backward()\n",
    "asin below minus one": "import torch\nx = torch.tensor([-0.5, -0.9], requires_grad=True)\ny = x * 1.2\n"
                            "r = torch.asin(y)\nr.sum().backward()\n",
    "a fractional power of a negative": "import torch\nx = torch.tensor([1.0, 3.0], requires_grad=True)\n"
                                        "v = x - 2\nr = v ** 0.5\nr.sum().backward()\n",
    "a diverged product": "import torch\nw = torch.full((2, 3), 3e37, requires_grad=True)\n"
                          "x = torch.tensor([[100.0, -100.0]])\ny = torch.mm(x, w)\ny.sum().backward()\n",
}
CAUSES = {  # NOTE [a forward cause only where it is certain] in analysis/nonfinite/forward_traps.py
    "inf minus inf": "inf − inf",
    "zero over zero": "0 / 0",
    "log of a negative": "log of a negative number",
    "softmax of a masked row": "every entry is −inf",
    "sqrt of a negative": "sqrt of a negative number",
    "a diverged product": "overflow float32",
    "inf over inf": "inf / inf",
    "acos past one": "acos of a value outside [−1, 1]",
    "asin below minus one": "asin of a value outside [−1, 1]",
    "a fractional power of a negative": "fractional power 0.5",
}


def _arithmetic_holds(name: str, ins: list[torch.Tensor], out: torch.Tensor) -> bool:
    """Torch's own values agree with the cause: at the NaN elements, the inputs are what the
    cause says they are."""
    bad = torch.isnan(out)
    if name == "inf minus inf":
        return bool(torch.isinf(ins[0][bad]).all() and torch.isinf(ins[1][bad]).all())
    if name == "zero over zero":
        return bool((ins[0][bad] == 0).all() and (ins[1][bad] == 0).all())
    if name in ("log of a negative", "sqrt of a negative"):
        return bool((ins[0][bad] < 0).all())
    if name == "softmax of a masked row":
        rows = bad.any(dim=-1)
        return bool(torch.isneginf(ins[0][rows]).all())
    if name == "inf over inf":
        return bool(torch.isinf(ins[0][bad]).all() and torch.isinf(ins[1].expand_as(out)[bad]).all())
    if name in ("acos past one", "asin below minus one"):
        return bool((ins[0][bad].abs() > 1).all())
    if name == "a fractional power of a negative":
        return bool((ins[0][bad] < 0).all())
    if name == "a diverged product":
        # every input finite, but one product of an element of each passes float32's range
        largest = float(ins[0].abs().max()) * float(ins[1].abs().max())
        return all(bool(torch.isfinite(t).all()) for t in ins) and largest > torch.finfo(torch.float32).max
    return False


class _FirstNaN(TorchDispatchMode):
    """The first op, in execution order, whose output holds a NaN while its inputs hold none."""

    def __init__(self) -> None:
        super().__init__()
        self.first: str | None = None
        self.inputs: list[torch.Tensor] = []
        self.output: torch.Tensor | None = None

    @staticmethod
    def bad(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.is_floating_point() and bool(torch.isnan(t).any())

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.first is None:
            ins = [a for a in list(args) + list((kwargs or {}).values()) if isinstance(a, torch.Tensor)]
            outs = out if isinstance(out, tuple | list) else (out,)
            if any(self.bad(t) for t in outs) and not any(self.bad(t) for t in ins):
                self.first = func.overloadpacket.__name__
                self.inputs = [t.detach().clone() for t in ins]
                self.output = outs[0].detach().clone()
        return out


def _bare_first_nan(code: str) -> str | None:
    return _bare(code).first


def _bare(code: str) -> _FirstNaN:
    torch.manual_seed(0)
    mode = _FirstNaN()
    with mode:
        exec(compile(code, "<bare>", "exec"), {"__name__": "__main__"})
    return mode


KERNEL_DEPENDENT = {"a diverged product"}
"""Programs whose NaN depends on the CPU's kernel: a matrix product whose two products pass
float32's range with opposite signs is inf − inf = NaN when the kernel rounds each product, but
+inf where it fuses the multiply-add (``fma(-100, 3e37, inf)`` is inf): there torch makes no
NaN, and the judge must claim none."""


def _no_forward_nan_claimed(code: str) -> None:
    entry = _forward(code)
    assert entry is None or entry["kind"] != "nan", entry


def _forward(code: str) -> dict[str, Any] | None:
    doc, _, _ = recorded_run(code, native=True)
    found = analyze(doc.model_dump(mode="json", by_alias=True)) or {}
    return next((e for e in found.get("nonfinite") or [] if e["phase"] == "forward"), None)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_forward_nan_is_blamed_on_the_op_torch_made_it_in(name: str) -> None:
    code = PROGRAMS[name]
    op = _bare_first_nan(code)
    if op is None and name in KERNEL_DEPENDENT:
        _no_forward_nan_claimed(code)
        return
    assert op is not None
    op = op.lstrip("_")  # aten::_softmax is softmax's kernel
    entry = _forward(code)
    assert entry is not None and entry["kind"] == "nan", entry
    assert re.sub(r"Backward\d+$", "", entry["name"]).lower() == op, (entry, op)
    line = next(i for i, text in enumerate(code.splitlines(), 1) if f"{op}(" in text or
                {"sub": " - ", "div": " / ", "mul": " * ", "pow": " ** "}.get(op, "\0") in text)
    assert entry["line"] == line, entry


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_forward_cause_is_the_arithmetic_torch_did(name: str) -> None:
    """The cause names the arithmetic that made the NaN, and torch's own inputs at the NaN
    elements are what it says (a row of -inf, both operands 0, a negative under log)."""
    code = PROGRAMS[name]
    bare = _bare(code)
    if bare.output is None and name in KERNEL_DEPENDENT:
        _no_forward_nan_claimed(code)
        return
    assert bare.output is not None and _arithmetic_holds(name, bare.inputs, bare.output), name
    entry = _forward(code)
    assert entry is not None and CAUSES[name] in entry["cause"], entry
    assert entry["trap"], entry


class _FirstInf(_FirstNaN):
    """The first op, in execution order, whose output holds an infinity while its inputs are
    all finite."""

    @staticmethod
    def bad(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.is_floating_point() and bool(torch.isinf(t).any())


@pytest.mark.parametrize("name", ["inf minus inf", "inf over inf"])
def test_a_nan_made_of_an_infinity_names_the_op_that_first_made_the_infinity(name: str) -> None:
    """NOTE [a forward NaN made of an infinity]: the NaN's producer stays the op that made it,
    and its cause names the op where the infinity began (torch's own: the first op whose output
    holds an infinity from finite inputs), with that op's trap: exp's overflow above 88.72."""
    code = PROGRAMS[name]
    torch.manual_seed(0)
    mode = _FirstInf()
    with mode:
        exec(compile(code, "<bare>", "exec"), {"__name__": "__main__"})
    assert mode.first == "exp", mode.first
    entry = _forward(code)
    assert entry is not None and entry["kind"] == "nan"
    line = next(i for i, text in enumerate(code.splitlines(), 1) if "torch.exp(" in text)
    assert f"the infinity was first made by ExpBackward0, line {line}: exp overflows float32" in entry["cause"], entry
    assert "exp of a large" in entry["trap"], entry


def test_detect_anomaly_blames_the_backward_node_where_the_subtraction_is_the_producer() -> None:
    entry = _forward(INF_MINUS_INF)
    assert entry is not None and entry["name"] == "SubBackward0" and entry["line"] == 4
    x = torch.tensor([1000.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anomaly mode's own "enabled" warning and its traceback
        with pytest.raises(RuntimeError, match="ExpBackward0"), torch.autograd.detect_anomaly():
            a = torch.exp(x)
            (((a - a) * 2 + 1).sum()).backward()


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_no_forward_alarm_on_a_lesson(lesson: Path) -> None:
    code = lesson.read_text()
    entry = _forward(code)
    assert entry is None or _bare_first_nan(code) is not None, entry


def test_an_attention_mask_of_minus_inf_is_no_alarm() -> None:
    doc, _, _ = recorded_run(GPT_LIKE, native=True)
    d = doc.model_dump(mode="json", by_alias=True)
    assert any(n["name"] == "MaskedFillBackward0" and any(o["stats"]["min"] == "-inf" for o in n["output"])
               for n in d["graph"]["nodes"])  # the mask did put -inf in
    assert not (analyze(d) or {}).get("nonfinite")


def test_an_inf_dropped_by_where_is_no_forward_alarm() -> None:
    code = ("import torch\nx = torch.tensor([0.0, 2.0], requires_grad=True)\n"
            "y = torch.where(x != 0, 1 / x, torch.zeros_like(x))\nz = torch.where(y > 0, y, y * 0)\n"
            "z.sum().backward()\n")
    assert _forward(code) is None
