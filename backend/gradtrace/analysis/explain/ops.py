"""The catalogue of backward rules: for each op, what each input's gradient is, element by element.

A rule takes the node's received gradient ``g`` (``grad_outputs[0]``), its saved tensors by name
(their values, which capture keeps for tensors of at most 1,000 elements) and the shapes of the
gradients it passes on, and gives for input ``i`` and its element ``k`` the rule written with
the recorded numbers and the value (``tests/analysis/test_explain.py`` checks every rule against
the recorded ``grad_inputs`` and torch's real ``.grad`` in float64). Where a rule is the local
derivative of a one-input op at its input, the number comes from
:data:`gradtrace.analysis.local_derivatives.LOCAL_DERIVATIVES`, the same function the first-NaN
explanation uses, so the two can never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradtrace.analysis.explain.tensors import Flat, broadcast_index, fmt, fmt_operand, numel, sources, unravel
from gradtrace.analysis.local_derivatives import LOCAL_DERIVATIVES, _div


@dataclass(frozen=True)
class Ctx:
    g: Flat
    saved: dict[str, Flat]
    in_shapes: list[tuple[int, ...] | None]
    args: dict[str, Any] = field(default_factory=dict)
    """The node's ``saved_args`` (pow's exponent, select's dim and index)."""
    names: frozenset[str] = frozenset()
    """Every saved tensor's name, its values kept or not (an optional one absent was None)."""
    gs: tuple[Flat | None, ...] = ()
    """Every received gradient (``grad_outputs``), for the ops with several outputs (split)."""
    dtypes: dict[str, str] = field(default_factory=dict)
    """Each saved tensor's dtype (``index`` reads a bool mask differently from indices)."""
    in_dtypes: tuple[str | None, ...] = ()
    """The dtype of each gradient the node passed on (a cast's rule rounds to it)."""
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)
    """What a rule works out once per node and reads at many elements (a batch norm channel's
    means, attention's rows of P): one node's explanation at its first elements reuses them."""

    def arg(self, name: str, default: Any = None) -> Any:
        return self.args.get(name, default)


class NotKept(LookupError):
    """A rule needs a saved tensor whose values the document did not keep (a rule raises it for
    an optional operand, ``nll_loss``'s weight; ``Rule.needs`` covers the others)."""


class Unsupported(ValueError):
    """A rule that cannot be exact for this node's arguments (it says why instead of a number)."""


def only_output_grad(ctx: Ctx, name: str) -> None:
    """Raise :class:`Unsupported` when a normalization's saved statistics (its mean and rstd
    outputs) received a gradient of their own: the rules here are for a gradient into the
    normalized output alone, as ``nn.BatchNorm``, ``nn.LayerNorm`` and ``nn.GroupNorm`` leave it."""
    if any(g is not None for g in ctx.gs[1:]):
        raise Unsupported(f"a gradient into {name}'s mean or rstd outputs (the program used them) is not written "
                          "here")


Elem = Callable[[Ctx, int, int], tuple[str, float]]


@dataclass(frozen=True)
class Rule:
    texts: tuple[str, ...]
    """The rule for each input, in the op's input order (``grad_self = grad_out · other``)."""
    needs: tuple[tuple[str, ...], ...]
    """For each input, the saved tensors its rule reads."""
    elem: Elem
    args: tuple[str, ...] = ()
    """The saved arguments it reads (absent from documents written before ``saved_args``)."""
    variadic: bool = False
    """Its one text stands for each of any number of inputs (``cat``'s and ``stack``'s tensors)."""

    def texts_for(self, inputs: int) -> tuple[str, ...]:
        """The rule of each of a node's ``inputs`` inputs."""
        return self.texts * max(inputs, 1) if self.variadic else self.texts

    def needs_of(self, i: int) -> tuple[str, ...]:
        return self.needs[min(i, len(self.needs) - 1)]


def _summed(ctx: Ctx, i: int, k: int, term: Callable[[int], tuple[str, float]]) -> tuple[str, float]:
    """Sum of ``term(j)`` over output elements ``j`` broadcast from input ``i``'s element ``k``.
    A 0-dim input (``w / w.norm()``, a learned temperature) has the shape ``()``, which is
    falsy but known: every output element reads it."""
    shape = ctx.in_shapes[i]
    if shape is None:
        shape = ctx.g.shape
    parts = [term(j) for j in sources(k, ctx.g.shape, shape)]
    value = math.fsum(v for _, v in parts)
    if len(parts) == 1:
        return parts[0][0], value
    shown = " + ".join(t for t, _ in parts[:4]) + (" + …" if len(parts) > 4 else "")
    return shown, value


def _operand(ctx: Ctx, name: str, j: int) -> float:
    """Saved tensor ``name`` as read by output element ``j`` (it may be broadcast)."""
    t = ctx.saved[name]
    return t.at(broadcast_index(j, ctx.g.shape, t.shape) if t.shape != ctx.g.shape else j)


def _unary(text: str, needs: tuple[str, ...], local: Callable[[Ctx, int], tuple[str, float]],
           args: tuple[str, ...] = ()) -> Rule:
    """One input, elementwise: ``grad_in[k] = grad_out[k] · local(k)``."""

    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        g = ctx.g.at(k)
        shown, factor = local(ctx, k)
        return f"{fmt(g)} · {shown}", g * factor

    return Rule((text,), (needs,), elem, args)


def _binary(texts: tuple[str, str], needs: tuple[tuple[str, ...], ...],
            locals_: tuple[Callable[[Ctx, int], tuple[str, float]], ...], args: tuple[str, ...] = ()) -> Rule:
    """Two broadcast inputs: ``grad_in_i[k] = Σ_j grad_out[j] · local_i(j)`` over ``j`` reading ``k``."""

    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        def term(j: int) -> tuple[str, float]:
            g = ctx.g.at(j)
            shown, factor = locals_[i](ctx, j)
            return (f"{fmt(g)} · {shown}" if shown else fmt(g * factor)), g * factor
        return _summed(ctx, i, k, term)

    return Rule(texts, needs, elem, args)


def _s(name: str) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        v = _operand(ctx, name, j)
        return fmt(v), v
    return f


def _div_other(ctx: Ctx, j: int) -> tuple[str, float]:
    """Division's factor for its divisor: −self / other²."""
    x, o = _operand(ctx, "self", j), _operand(ctx, "other", j)
    return f"(−{fmt_operand(x)}/{fmt_operand(o)}²)", _div(-x, o ** 2)


def _const(c: float) -> Callable[[Ctx, int], tuple[str, float]]:
    return lambda ctx, j: ("" if c == 1 else fmt(c), c)


def _alpha(sign: float) -> Callable[[Ctx, int], tuple[str, float]]:
    """``other``'s factor in ``self ± alpha · other`` (alpha 1 unless the node saved another)."""
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        a = sign * float(ctx.arg("alpha", 1))
        return ("" if a == 1 else fmt(a)), a
    return f


def _pass_through(text: str) -> Rule:
    """Same elements in the same row-major order (views, reshapes, clones, AccumulateGrad)."""
    return Rule((text,), ((),), lambda ctx, i, k: (fmt(ctx.g.at(k)), ctx.g.at(k)))


def _spread(ctx: Ctx, i: int, k: int, scale: float) -> tuple[str, float]:
    """Sum/Mean over all elements: every input element gets the one received number (times scale)."""
    g = ctx.g.at(0)
    return (fmt(g) if scale == 1 else f"{fmt(g)} / {fmt(1 / scale)}"), g * scale


def _mean(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    n = numel(ctx.in_shapes[i] or ())
    return _spread(ctx, i, k, 1.0 / n)


def _transpose2(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = ctx.in_shapes[i] or ()
    r, c = unravel(k, shape) if len(shape) == 2 else (k, 0)
    j = c * shape[0] + r if len(shape) == 2 else k
    return fmt(ctx.g.at(j)), ctx.g.at(j)


def _matmul(a: str | None, b: str | None, bias_first: bool) -> Rule:
    """``out = [beta · bias +] alpha · A @ B``: grad_A = alpha · grad_out @ Bᵀ, grad_B = alpha · Aᵀ @
    grad_out, grad_bias = beta · Σ rows (``addmm``'s alpha and beta are 1 unless the node saved
    others)."""
    offset = 1 if bias_first else 0

    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        shown, value = _product(ctx, i, k)
        scale = float(ctx.arg("beta" if bias_first and i == 0 else "alpha", 1)) if bias_first else 1.0
        if scale == 1:
            return shown, value
        return f"{fmt(scale)} · ({shown})", scale * value

    def _product(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        n, m = ctx.g.shape
        if bias_first and i == 0:
            return _summed(ctx, 0, k, lambda j: (fmt(ctx.g.at(j)), ctx.g.at(j)))
        if i == offset:  # grad_A[r, c] = Σ_q grad_out[r, q] · B[c, q]
            mat = ctx.saved[b or ""]
            width = mat.shape[0]
            r, c = divmod(k, width)
            parts = [(ctx.g.at(r * m + q), mat.at(c * m + q)) for q in range(m)]
        else:  # grad_B[r, c] = Σ_p A[p, r] · grad_out[p, c]
            mat = ctx.saved[a or ""]
            width = mat.shape[1]
            r, c = divmod(k, m)
            parts = [(mat.at(p * width + r), ctx.g.at(p * m + c)) for p in range(n)]
        value = math.fsum(x * y for x, y in parts)
        shown = " + ".join(f"{fmt(x)}·{fmt(y)}" for x, y in parts[:3]) + (" + …" if len(parts) > 3 else "")
        return shown, value

    # the texts as nn.Linear has them; an addmm given another alpha or beta shows it in its
    # instance (``0.6 · (…)``) and among the arguments
    grads = ("grad_mat1 = grad_out @ mat2ᵀ", "grad_mat2 = mat1ᵀ @ grad_out") if bias_first else (
        "grad_self = grad_out @ mat2ᵀ", "grad_mat2 = selfᵀ @ grad_out")
    texts = (("grad_self = Σ_rows grad_out",) if bias_first else ()) + grads
    needs = ((), (b or "",), (a or "",)) if bias_first else ((b or "",), (a or "",))
    return Rule(texts, needs, elem)


def _cast_back(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """The received number rounded to the dtype of the gradient passed on (bfloat16, float16 or
    float32 from a wider one), as the cast back rounds it."""
    g = ctx.g.at(k)
    dtype = ctx.in_dtypes[i] if i < len(ctx.in_dtypes) else None
    value = round_to(g, dtype)
    return (fmt(g) if value == g or math.isnan(g) else f"{fmt(g)} as {dtype}"), value


def round_to(x: float, dtype: str | None) -> float:
    """``x`` rounded to the nearest ``dtype`` number (ties to even; unchanged for other dtypes)."""
    if dtype == "float32":
        return float(np.float32(x))
    if dtype == "float16":
        return float(np.float16(x))
    if dtype == "bfloat16" and math.isfinite(x):
        bits = int(np.array(x, dtype=np.float32).view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array(bits, dtype=np.uint32).view(np.float32))
    return x


def _relu(ctx: Ctx, k: int) -> tuple[str, float]:
    y = ctx.saved["result"].at(k)
    return ("1" if y > 0 else "0"), (1.0 if y > 0 else 0.0)


def _f(name: str, text: Callable[[float], str], fn: Callable[[float], float]
       ) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, k: int) -> tuple[str, float]:
        x = ctx.saved[name].at(k)
        return text(x), fn(x)
    return f


def _gelu(x: float) -> float:
    cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
    return cdf + x * math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _gelu_tanh(x: float) -> float:
    """d/dx of ``gelu(x, approximate="tanh")``."""
    c = math.sqrt(2.0 / math.pi)
    t = math.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)


def _gelu_local(ctx: Ctx, k: int) -> tuple[str, float]:
    x = ctx.saved["self"].at(k)
    if ctx.arg("approximate", "none") == "tanh":
        return f"gelu_tanh′({fmt(x)})", _gelu_tanh(x)
    return f"gelu′({fmt(x)})", _gelu(x)


BACKWARD_RULES: dict[str, Rule] = {
    "AddBackward0": _binary(("grad_self = grad_out", "grad_other = grad_out · alpha"), ((), ()),
                            (_const(1), _alpha(1))),
    "SubBackward0": _binary(("grad_self = grad_out", "grad_other = −grad_out · alpha"), ((), ()),
                            (_const(1), _alpha(-1))),
    "MulBackward0": _binary(("grad_self = grad_out · other", "grad_other = grad_out · self"),
                            (("other",), ("self",)), (_s("other"), _s("self"))),
    "DivBackward0": _binary(("grad_self = grad_out / other", "grad_other = −grad_out · self / other²"),
                            (("other",), ("other", "self")),
                            (lambda c, j: (f"1/{fmt(_operand(c, 'other', j))}", _div(1.0, _operand(c, "other", j))),
                             _div_other)),
    "RsubBackward1": _unary("grad_self = −grad_out · alpha  (other − alpha · self, other a number)", (),
                            lambda c, k: (f"({fmt(-float(c.arg('alpha', 1)))})", -float(c.arg("alpha", 1)))),
    "NegBackward0": _unary("grad_self = −grad_out", (), lambda c, k: ("(−1)", -1.0)),
    "ExpBackward0": _unary("grad_self = grad_out · result  (result = exp(self))", ("result",), _s("result")),
    "TanhBackward0": _unary("grad_self = grad_out · (1 − result²)", ("result",),
                            _f("result", lambda y: f"(1 − {fmt(y)}²)", lambda y: 1 - y * y)),
    "SigmoidBackward0": _unary("grad_self = grad_out · result · (1 − result)", ("result",),
                               _f("result", lambda y: f"{fmt(y)} · (1 − {fmt(y)})", lambda y: y * (1 - y))),
    "ReluBackward0": _unary("grad_self = grad_out · [result > 0]", ("result",), _relu),
    "LogBackward0": _unary("grad_self = grad_out / self", ("self",),
                           _f("self", lambda x: f"(1/{fmt(x)})", LOCAL_DERIVATIVES["LogBackward0"])),
    "SqrtBackward0": _unary("grad_self = grad_out / (2 · result)", ("result",),
                            _f("result", lambda y: f"1/(2·{fmt(y)})", lambda y: _div(1.0, 2 * y))),
    "SinBackward0": _unary("grad_self = grad_out · cos(self)", ("self",),
                           _f("self", lambda x: f"cos({fmt(x)})", LOCAL_DERIVATIVES["SinBackward0"])),
    "CosBackward0": _unary("grad_self = −grad_out · sin(self)", ("self",),
                           _f("self", lambda x: f"(−sin({fmt(x)}))", LOCAL_DERIVATIVES["CosBackward0"])),
    "AbsBackward0": _unary("grad_self = grad_out · sign(self)", ("self",),
                           _f("self", lambda x: f"sign({fmt(x)})", LOCAL_DERIVATIVES["AbsBackward0"])),
    "GeluBackward0": _unary("grad_self = grad_out · gelu′(self)  (Φ(self) + self · φ(self); "
                            "the tanh form's derivative when approximate='tanh')", ("self",), _gelu_local),
    "SumBackward0": Rule(("grad_self[k] = grad_out  (every element)",), ((),), lambda c, i, k: _spread(c, i, k, 1.0)),
    "MeanBackward0": Rule(("grad_self[k] = grad_out / numel(self)",), ((),), _mean),
    "ExpandBackward0": Rule(("grad_self = grad_out summed over the expanded dims",), ((),),
                            lambda c, i, k: _summed(c, i, k, lambda j: (fmt(c.g.at(j)), c.g.at(j)))),
    "TBackward0": Rule(("grad_self = grad_outᵀ",), ((),), _transpose2),
    "MmBackward0": _matmul("self", "mat2", False),
    "AddmmBackward0": _matmul("mat1", "mat2", True),
}
for _name in ("ViewBackward0", "UnsafeViewBackward0", "SqueezeBackward0",
              "SqueezeBackward1", "SqueezeBackward2", "UnsqueezeBackward0", "ReshapeAliasBackward0"):
    BACKWARD_RULES[_name] = _pass_through("grad_self = grad_out reshaped to self's shape")
BACKWARD_RULES["CloneBackward0"] = _pass_through("grad_self = grad_out")
BACKWARD_RULES["AliasBackward0"] = _pass_through("grad_self = grad_out")
for _name in ("FakeQuantizePerTensorAffineCachemaskBackward0", "FakeQuantizePerChannelAffineCachemaskBackward0"):
    # the straight-through estimator: the rounding passes the gradient as it is, the clamp to
    # [quant_min, quant_max] stops it (``mask``, saved by the forward)
    BACKWARD_RULES[_name] = _unary("grad_self = grad_out · mask  (mask: self within the quantized range)",
                                   ("mask",), _s("mask"))
BACKWARD_RULES["ToCopyBackward0"] = Rule(("grad_self = grad_out (cast back to self's dtype)",), ((),), _cast_back)
BACKWARD_RULES["AccumulateGrad"] = _pass_through("leaf.grad += grad_out")
