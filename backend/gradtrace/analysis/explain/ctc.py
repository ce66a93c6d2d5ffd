"""The rule of the CTC loss (``F.ctc_loss``, ``nn.CTCLoss``: ``CtcLossBackward0/1``), worked out
from the saved log-probabilities and targets by the forward-backward recursions.

NOTE [CTC's rule]
    The node is ``_ctc_loss``: one negative log-likelihood per sample (``nll[n]``; the loss's
    reduction is done by the ops after it). With the target ``l`` of sample ``n`` extended
    with blanks (``l′ = b l₁ b l₂ … b``), ``α_t(s)`` is the probability of the prefixes that
    reach ``l′_s`` at step ``t`` and ``β_t(s)`` that of the suffixes from there, both
    including step ``t``'s own probability. The gradient of ``nll[n]`` with respect to
    ``log_probs[t, n, c]`` is ``exp(log_probs[t, n, c]) − γ_t(c)``, where ``γ_t(c) = Σ_{s:
    l′_s = c} α_t(s) β_t(s) / (p(l | x) · y_t(c))`` is the posterior probability that ``c``
    is emitted at ``t``: the softmax's probability minus how much of the target's
    probability goes through ``c`` there. Steps past the sample's input length get 0, and so
    does a sample whose target cannot be aligned (``nll = inf``) when ``zero_infinity``. The
    recursions run here in float64, in log space; the kernel's own ``log_alpha`` is scratch
    that is not kept (NOTE [a kernel's workspace] in capture/tensordoc.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported
from gradtrace.analysis.explain.tensors import Flat, fmt, fmt_operand, unravel


def _lengths(ctx: Ctx, name: str) -> list[int]:
    """A saved length list: an argument (``CtcLossBackward0``) or a tensor (``CtcLossBackward1``)."""
    if name in ctx.saved:
        return [int(x) for x in np.asarray(ctx.saved[name].values).reshape(-1)]
    found = ctx.arg(name)
    if found is None:
        raise Unsupported(f"the {name} were not recorded")
    return [int(x) for x in (found if isinstance(found, list) else [found])]


def _target(ctx: Ctx, n: int, lengths: list[int]) -> list[int]:
    t: Flat = ctx.saved["targets"]
    flat = [int(x) for x in np.asarray(t.values).reshape(-1)]
    if len(t.shape) == 2:  # padded: one row per sample
        return flat[n * t.shape[1]: n * t.shape[1] + lengths[n]]
    start = sum(lengths[:n])  # concatenated
    return flat[start: start + lengths[n]]


def _lse(*xs: float) -> float:
    top = max(xs)
    if top == -math.inf:
        return -math.inf
    return top + math.log(math.fsum(math.exp(x - top) for x in xs))


def _posterior(ctx: Ctx, n: int) -> dict[str, Any]:
    """Sample ``n``'s ``γ_t(c)`` (in log space) and its ``nll``, recomputed once per sample."""
    key = ("ctc", n)
    found: dict[str, Any] | None = ctx.memo.get(key)
    if found is not None:
        return found
    lp_all = ctx.saved["log_probs"]
    shape = lp_all.shape
    lp = np.asarray(lp_all.values, dtype=np.float64).reshape(shape)
    if len(shape) == 2:  # one unbatched sample: [T, C]
        lp = lp[:, None, :]
    steps, classes = lp.shape[0], lp.shape[2]
    blank = int(ctx.arg("blank", 0))
    length = _lengths(ctx, "input_lengths")[n] if len(shape) == 3 else _lengths(ctx, "input_lengths")[0]
    labels = _target(ctx, n, _lengths(ctx, "target_lengths"))
    ext = [blank]
    for c in labels:
        ext += [c, blank]
    size = len(ext)
    y = lp[:length, n, :]
    alpha = np.full((length, size), -math.inf)
    beta = np.full((length, size), -math.inf)
    if length > 0:
        alpha[0, 0] = y[0, ext[0]]
        if size > 1:
            alpha[0, 1] = y[0, ext[1]]
        for t in range(1, length):
            for s in range(size):
                terms = [alpha[t - 1, s]] + ([alpha[t - 1, s - 1]] if s >= 1 else [])
                if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                    terms.append(alpha[t - 1, s - 2])
                alpha[t, s] = _lse(*terms) + y[t, ext[s]]
        beta[length - 1, size - 1] = y[length - 1, ext[size - 1]]
        if size > 1:
            beta[length - 1, size - 2] = y[length - 1, ext[size - 2]]
        for t in range(length - 2, -1, -1):
            for s in range(size):
                terms = [beta[t + 1, s]] + ([beta[t + 1, s + 1]] if s + 1 < size else [])
                if s + 2 < size and ext[s] != blank and ext[s] != ext[s + 2]:
                    terms.append(beta[t + 1, s + 2])
                beta[t, s] = _lse(*terms) + y[t, ext[s]]
    ends = [-math.inf]  # no step: nothing aligns
    if length:
        ends = [alpha[length - 1, size - 1]] + ([alpha[length - 1, size - 2]] if size > 1 else [])
    nll = -_lse(*ends)
    through = np.full((steps, classes), -math.inf)  # log Σ_{s: l′_s = c} α_t(s) β_t(s)
    for t in range(length):
        for c in set(ext):
            through[t, c] = _lse(*[alpha[t, s] + beta[t, s] for s in range(size) if ext[s] == c])
    found = {"lp": lp, "nll": nll, "through": through, "length": length}
    ctx.memo[key] = found
    return found


def _ctc(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = ctx.in_shapes[i] or ()
    at = unravel(k, shape)
    t, n, c = at if len(shape) == 3 else (at[0], 0, at[1])
    post = _posterior(ctx, n)
    g = ctx.g.at(n) if ctx.g.shape else ctx.g.at(0)
    if t >= post["length"]:
        return f"0  (step {t} is past sample {n}'s input length {post['length']})", 0.0
    nll = post["nll"]
    if nll == math.inf:
        if ctx.arg("zero_infinity", False):
            return "0  (the target cannot be aligned: nll = inf, zero_infinity)", 0.0
        raise Unsupported("the target cannot be aligned to the input (nll = inf)")
    lp = float(post["lp"][t, n, c])
    prob = math.exp(lp)
    gamma = math.exp(post["through"][t, c] + nll - lp) if post["through"][t, c] > -math.inf else 0.0
    return f"{fmt(g)} · ({fmt(prob)} − {fmt_operand(gamma)})", g * (prob - gamma)


_TEXT = ("grad_log_probs[t, n, c] = grad_out[n] · (exp(log_probs[t, n, c]) − γ_t(c)),  γ_t(c) = Σ_{s: l′_s = c} "
         "α_t(s) β_t(s) / (p(target | input) · exp(log_probs[t, n, c])): the posterior that c is emitted at t "
         "(α, β: the forward-backward recursions over the target with blanks, from the saved log_probs); "
         "0 past the input length")
BACKWARD_RULES: dict[str, Rule] = {
    "CtcLossBackward0": Rule((_TEXT,), (("log_probs", "targets"),), _ctc,
                             ("blank", "input_lengths", "target_lengths", "zero_infinity")),
    "CtcLossBackward1": Rule((_TEXT,), (("log_probs", "targets", "input_lengths", "target_lengths"),), _ctc,
                             ("blank", "zero_infinity")),
}
