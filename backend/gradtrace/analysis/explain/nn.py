"""Rules of the network ops the lessons use: pow, ops with a number operand, softmax and
log-softmax, ``nll_loss``, layer norm, batched matmul (and ``baddbmm``, attention's masked
scores), maximum/minimum, leaky ReLU, clamp, where.

Those that read a non-tensor argument (pow's exponent, softmax's dim, ``nll_loss``'s reduction
and ignore_index, layer norm's normalized_shape) find it in the node's ``saved_args`` (NOTE
[saved arguments] in ``capture/saved.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gradtrace.analysis.explain.index import norm_dim
from gradtrace.analysis.explain.ops import (
    Ctx,
    NotKept,
    Rule,
    Unsupported,
    _binary,
    _operand,
    _summed,
    _unary,
    only_output_grad,
)
from gradtrace.analysis.explain.tensors import Flat, fmt, ravel, unravel
from gradtrace.analysis.numbers import number


def _num(x: object) -> float:
    """A saved number (``"inf"`` is how the document spells infinity); ValueError when it is none."""
    value = number(x)
    if value is None:
        raise ValueError(f"not a number: {x!r}")
    return value


def _pow(x: float, p: float) -> float:
    """``x ** p`` as torch computes it (IEEE: nan for a negative base and a fractional power)."""
    try:
        return math.pow(x, p)
    except ValueError:
        if x == 0 and p < 0:
            return math.inf
        return math.nan
    except OverflowError:
        return math.inf


def _base(x: float) -> str:
    """A power's base as written: ``(-2)^2``, not ``-2^2``."""
    return f"({fmt(x)})" if x < 0 or fmt(x).startswith("-") else fmt(x)


def _pow_local(ctx: Ctx, k: int) -> tuple[str, float]:
    e = _num(ctx.arg("exponent"))
    x = ctx.saved["self"].at(k)
    if e == 0:
        return "0  (exponent 0)", 0.0
    return f"{fmt(e)} · {_base(x)}^{fmt(e - 1)}", e * _pow(x, e - 1)


def _pow_tensor(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    """``self ** exponent``, both tensors: d/dself = e·x^(e−1), d/dexponent = result · log(x)."""
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        x, e = _operand(ctx, "self", j), _operand(ctx, "exponent", j)
        if i == 0:
            return (f"{fmt(e)} · {_base(x)}^{fmt(e - 1)}", e * _pow(x, e - 1)) if e != 0 else ("0", 0.0)
        if x == 0 and e >= 0:
            return "0", 0.0
        r = _operand(ctx, "result", j)
        return f"{fmt(r)} · log({fmt(x)})", r * (math.log(x) if x > 0 else math.nan)
    return f


def _other(op: str) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, k: int) -> tuple[str, float]:
        o = _num(ctx.arg("other"))
        return (fmt(o), o) if op == "*" else (f"(1/{fmt(o)})", 1 / o if o else math.copysign(math.inf, o))
    return f


def _row(ctx: Ctx, k: int, shape: tuple[int, ...]) -> list[int]:
    """The flat indices of the elements on ``k``'s line along the node's ``dim``."""
    if not shape:
        return [k]
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    c = list(unravel(k, shape))
    out = []
    for q in range(shape[dim]):
        c[dim] = q
        out.append(ravel(tuple(c), shape))
    return out


def _log_softmax(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    r = ctx.saved["result"]
    total = math.fsum(ctx.g.at(j) for j in _row(ctx, k, ctx.g.shape))
    g, y = ctx.g.at(k), r.at(k)
    return f"{fmt(g)} − exp({fmt(y)}) · {fmt(total)}", g - math.exp(y) * total


def _softmax(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    r = ctx.saved["result"]
    dot = math.fsum(ctx.g.at(j) * r.at(j) for j in _row(ctx, k, ctx.g.shape))
    g, y = ctx.g.at(k), r.at(k)
    return f"{fmt(y)} · ({fmt(g)} − {fmt(dot)})", y * (g - dot)


def _nll(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = ctx.in_shapes[i] or ()
    c = unravel(k, shape)
    cls = c[1] if len(shape) >= 2 else c[0] if shape else 0
    rest = (c[0], *c[2:]) if len(shape) >= 2 else ()
    target = ctx.saved["target"]
    t = int(target.at(ravel(rest, target.shape) if target.shape else 0))
    if t == int(ctx.arg("ignore_index", -100)):
        return f"0  (target {t} is ignore_index)", 0.0
    if cls != t:
        return f"0  (class {cls} ≠ target {t})", 0.0
    if "weight" in ctx.names and "weight" not in ctx.saved:
        raise NotKept("weight")
    w = ctx.saved["weight"].at(t) if "weight" in ctx.saved else 1.0
    reduction = int(ctx.arg("reduction", 1))  # 0 none, 1 mean, 2 sum
    g = ctx.g.at(ravel(rest, ctx.g.shape)) if reduction == 0 and ctx.g.shape else ctx.g.at(0)
    if reduction == 1:
        total = ctx.saved["total_weight"].at(0)
        return f"−{fmt(w)} · {fmt(g)} / {fmt(total)}", -w * g / total
    return f"−{fmt(w)} · {fmt(g)}", -w * g


def _layer_norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_input = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) over the normalized elements of a row,
    with x̂ = (x − mean) · rstd and ĝ = grad_out · weight; grad_weight/grad_bias sum over rows."""
    only_output_grad(ctx, "layer norm")
    m = math.prod(int(s) for s in ctx.arg("normalized_shape"))
    rows = len(ctx.g.values) // m if m else 0
    if i == 2:
        parts = [ctx.g.at(r * m + k) for r in range(rows)]
        return " + ".join(fmt(a) for a in parts[:3]) + (" + …" if len(parts) > 3 else ""), math.fsum(parts)
    x, mean, rstd = ctx.saved["input"], ctx.saved["result1"], ctx.saved["result2"]
    if "weight" in ctx.names and "weight" not in ctx.saved:
        raise NotKept("weight")
    w: Flat | None = ctx.saved.get("weight")

    def xhat(r: int, q: int) -> float:
        return (x.at(r * m + q) - mean.at(r)) * rstd.at(r)

    if i == 0:
        r, q = divmod(k, m)
        gh = [ctx.g.at(r * m + p) * (w.at(p) if w else 1.0) for p in range(m)]
        mg = math.fsum(gh) / m
        mgx = math.fsum(gh[p] * xhat(r, p) for p in range(m)) / m
        s, xh = rstd.at(r), xhat(r, q)
        return f"{fmt(s)} · ({fmt(gh[q])} − {fmt(mg)} − {fmt(xh)} · {fmt(mgx)})", s * (gh[q] - mg - xh * mgx)
    pairs = [(ctx.g.at(r * m + k), xhat(r, k)) for r in range(rows)]
    value = math.fsum(a * b for a, b in pairs)
    return " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in pairs[:3]) + (" + …" if len(pairs) > 3 else ""), value


def _bmm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[b] = grad_out[b] @ mat2[b]ᵀ, grad_mat2[b] = self[b]ᵀ @ grad_out[b]."""
    return _batched(ctx, i, k, "self", "mat2")


def _baddbmm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``out = beta · self + alpha · batch1 @ batch2`` (per batch; ``self`` broadcast to the
    output, an attention mask added to the scores): grad_self = beta · grad_out summed over
    what ``self`` was broadcast across, grad_batch1 and grad_batch2 as ``bmm``'s, times alpha."""
    if i == 0:
        shown, value = _summed(ctx, 0, k, lambda j: (fmt(ctx.g.at(j)), ctx.g.at(j)))
        scale = float(ctx.arg("beta", 1))
    else:
        shown, value = _batched(ctx, i - 1, k, "batch1", "batch2")
        scale = float(ctx.arg("alpha", 1))
    return (shown, value) if scale == 1 else (f"{fmt(scale)} · ({shown})", scale * value)


def _batched(ctx: Ctx, i: int, k: int, first: str, second: str) -> tuple[str, float]:
    """Element ``k`` of the gradient of ``first`` (``i`` 0) or ``second`` (1) of ``first @ second``
    per batch: Σ_q grad_out[b, r, q] · second[b, c, q], or Σ_q first[b, q, r] · grad_out[b, q, c]."""
    _, n, m = ctx.g.shape
    if i == 0:
        mat = ctx.saved[second]  # [B, p, m]
        p = mat.shape[1]
        b, rest = divmod(k, n * p)
        r, c = divmod(rest, p)
        parts = [(ctx.g.at(b * n * m + r * m + q), mat.at(b * p * m + c * m + q)) for q in range(m)]
    else:
        mat = ctx.saved[first]  # [B, n, p]
        p = mat.shape[2]
        b, rest = divmod(k, p * m)
        r, c = divmod(rest, m)
        parts = [(mat.at(b * n * p + q * p + r), ctx.g.at(b * n * m + q * m + c)) for q in range(n)]
    value = math.fsum(x * y for x, y in parts)
    return " + ".join(f"{fmt(x)}·{fmt(y)}" for x, y in parts[:3]) + (" + …" if len(parts) > 3 else ""), value


def _cdist(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``result[…, r, j] = ‖x1[…, r] − x2[…, j]‖_p``: grad_x1[…, r, m] = Σ_j grad_out[…, r, j] ·
    ∂result[…, r, j]/∂x1[…, r, m] and grad_x2[…, j, m] = −Σ_r of the same, where the derivative
    of a distance d along a difference δ is δ/d for p = 2, sign(δ) for p = 1,
    sign(δ)·|δ|^(p−1)/d^(p−1) for any other p ≥ 1 (0 where d is 0, as torch's ``_cdist_backward``),
    and sign(δ) on the coordinates where |δ| = d for p = ∞."""
    x1, x2, res = ctx.saved["x1"], ctx.saved["x2"], ctx.saved["result"]
    p = float(ctx.arg("p", 2.0))
    if p < 1 or x1.shape[:-2] != x2.shape[:-2] or tuple(res.shape) != tuple(ctx.g.shape):
        raise Unsupported("a p below 1, or batches broadcast against each other")
    n1, m = x1.shape[-2], x1.shape[-1]
    n2 = x2.shape[-2]

    def slope(d: float, dist: float) -> float:
        if dist == 0 or d == 0:
            return 0.0
        sign = 1.0 if d > 0 else -1.0
        if p == 2:
            return d / dist
        if p == 1:
            return sign
        if math.isinf(p):
            return sign if abs(d) == dist else 0.0
        return float(sign * abs(d) ** (p - 1) / dist ** (p - 1))

    if i == 0:
        b, rest = divmod(k, n1 * m)
        r, c = divmod(rest, m)
        rows = [(r, j) for j in range(n2)]
        sign = 1.0
    else:
        b, rest = divmod(k, n2 * m)
        j0, c = divmod(rest, m)
        rows = [(r, j0) for r in range(n1)]
        sign = -1.0
    parts = []
    for r, j in rows:
        g = ctx.g.at((b * n1 + r) * n2 + j)
        d = x1.at((b * n1 + r) * m + c) - x2.at((b * n2 + j) * m + c)
        parts.append((g, sign * slope(d, res.at((b * n1 + r) * n2 + j))))
    value = math.fsum(x * y for x, y in parts)
    shown = " + ".join(f"{fmt(x)}·{fmt(y)}" for x, y in parts[:3]) + (" + …" if len(parts) > 3 else "")
    return shown, value


def _pick(mine: str, theirs: str, bigger: bool) -> Callable[[Ctx, int], tuple[str, float]]:
    """maximum (``bigger``) / minimum: the gradient goes to the chosen operand, halved on a tie."""
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        a, b = _operand(ctx, mine, j), _operand(ctx, theirs, j)
        if a == b:
            return f"½  ({fmt(a)} = {fmt(b)})", 0.5
        won = a > b if bigger else a < b
        return f"[{fmt(a)} {'>' if bigger else '<'} {fmt(b)}]", 1.0 if won else 0.0
    return f


def _leaky(ctx: Ctx, k: int) -> tuple[str, float]:
    x, slope = ctx.saved["self"].at(k), _num(ctx.arg("negative_slope"))
    return (("1", 1.0) if x > 0 else (fmt(slope), slope))


def _clamp(ctx: Ctx, k: int) -> tuple[str, float]:
    x = ctx.saved["self"].at(k)
    lo, hi = ctx.arg("min"), ctx.arg("max")
    inside = (lo is None or x >= _num(lo)) and (hi is None or x <= _num(hi))
    span = f"{'' if lo is None else fmt(_num(lo))} ≤ {fmt(x)} ≤ {'' if hi is None else fmt(_num(hi))}".strip(" ≤")
    return f"[{span}]", 1.0 if inside else 0.0


def _where(keep: bool) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        cond = _operand(ctx, "condition", j) != 0
        return f"[condition {'true' if cond else 'false'}]", 1.0 if cond == keep else 0.0
    return f


BACKWARD_RULES: dict[str, Rule] = {
    "PowBackward0": _unary("grad_self = grad_out · exponent · self^(exponent − 1)", ("self",), _pow_local,
                           ("exponent",)),
    "PowBackward1": _binary(("grad_self = grad_out · exponent · self^(exponent − 1)",
                             "grad_exponent = grad_out · result · log(self)"),
                            (("self", "exponent"), ("self", "exponent", "result")), (_pow_tensor(0), _pow_tensor(1))),
    "MulBackward1": _unary("grad_self = grad_out · other  (other a number)", (), _other("*"), ("other",)),
    "DivBackward1": _unary("grad_self = grad_out / other  (other a number)", (), _other("/"), ("other",)),
    "AddBackward1": _unary("grad_self = grad_out  (self + a number)", (), lambda c, k: ("1", 1.0)),
    "SubBackward1": _unary("grad_self = grad_out  (self − a number)", (), lambda c, k: ("1", 1.0)),
    "LogSoftmaxBackward0": Rule(("grad_self = grad_out − exp(result) · Σ_dim grad_out",), (("result",),),
                                _log_softmax, ("dim",)),
    "SoftmaxBackward0": Rule(("grad_self = result · (grad_out − Σ_dim grad_out · result)",), (("result",),),
                             _softmax, ("dim",)),
    "SafeSoftmaxBackward0": Rule(("grad_self = result · (grad_out − Σ_dim grad_out · result)  "
                                  "(rows that are all −inf give 0)",), (("result",),), _softmax, ("dim",)),
    "NllLossBackward0": Rule(("grad_self[n, c] = −weight[c] · grad_out / total_weight if c = target[n] "
                              "(mean; no division for sum), else 0",), (("target", "total_weight"),),
                             _nll, ("reduction", "ignore_index")),
    "NllLoss2DBackward0": Rule(("grad_self[n, c, …] = −weight[c] · grad_out / total_weight if c = target[n, …] "
                                "(mean; no division for sum), else 0",), (("target", "total_weight"),),
                               _nll, ("reduction", "ignore_index")),
    "NativeLayerNormBackward0": Rule(
        ("grad_input = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)),  ĝ = grad_out · weight, x̂ = (input − mean) · rstd",
         "grad_weight = Σ_rows grad_out · x̂", "grad_bias = Σ_rows grad_out"),
        (("input", "result1", "result2"), ("input", "result1", "result2"), ()), _layer_norm, ("normalized_shape",)),
    "BmmBackward0": Rule(("grad_self = grad_out @ mat2ᵀ  (per batch)", "grad_mat2 = selfᵀ @ grad_out  (per batch)"),
                         (("mat2",), ("self",)), _bmm),
    "BaddbmmBackward0": Rule(("grad_self = beta · grad_out, summed where self was broadcast",
                              "grad_batch1 = alpha · grad_out @ batch2ᵀ  (per batch)",
                              "grad_batch2 = alpha · batch1ᵀ @ grad_out  (per batch)"),
                             ((), ("batch2",), ("batch1",)), _baddbmm, ("alpha", "beta")),
    "CdistBackward0": Rule(("grad_x1[…, r, m] = Σ_j grad_out[…, r, j] · (x1[…, r, m] − x2[…, j, m]) / result[…, r, j]  "
                            "(p = 2; sign(δ)·|δ|^(p−1)/result^(p−1) for other p)",
                            "grad_x2[…, j, m] = −Σ_r grad_out[…, r, j] · (x1[…, r, m] − x2[…, j, m]) "
                            "/ result[…, r, j]  (p = 2)"),
                           (("x1", "x2", "result"), ("x1", "x2", "result")), _cdist, ("p",)),
    "MaximumBackward0": _binary(("grad_self = grad_out · [self > other]  (½ on a tie)",
                                 "grad_other = grad_out · [other > self]  (½ on a tie)"),
                                (("self", "other"), ("self", "other")),
                                (_pick("self", "other", True), _pick("other", "self", True))),
    "MinimumBackward0": _binary(("grad_self = grad_out · [self < other]  (½ on a tie)",
                                 "grad_other = grad_out · [other < self]  (½ on a tie)"),
                                (("self", "other"), ("self", "other")),
                                (_pick("self", "other", False), _pick("other", "self", False))),
    "LeakyReluBackward0": _unary("grad_self = grad_out · (1 if self > 0 else negative_slope)", ("self",), _leaky,
                                 ("negative_slope",)),
    "ClampBackward1": _unary("grad_self = grad_out · [min ≤ self ≤ max]", ("self",), _clamp),
    "ClampMinBackward0": _unary("grad_self = grad_out · [self ≥ min]", ("self",), _clamp, ("min",)),
    "WhereBackward0": _binary(("grad_self = grad_out · [condition]", "grad_other = grad_out · [not condition]"),
                              (("condition",), ("condition",)), (_where(True), _where(False))),
}
