"""The rule of a fused LSTM layer on the CPU (``nn.LSTM`` runs each layer and direction as one
``mkldnn_rnn_layer``: ``MkldnnRnnLayerBackward0``), worked out by backpropagation through time
from the saved input, weights and initial state.

NOTE [an LSTM layer's rule]
    Forward, at each step ``t`` (last to first for a bidirectional LSTM's backward direction,
    ``reverse``): ``z_t = x_t W_ihᵀ + b_ih + h_{t−1} W_hhᵀ + b_hh``, split into the gates
    ``i, f, g, o`` (σ, σ, tanh, σ), ``c_t = f ∘ c_{t−1} + i ∘ g``, ``h_t = o ∘ tanh(c_t)``.
    Backward, from the last step to the first: ``dh_t = grad_output_t + dh`` from the step after
    (``grad_hy`` after the last), ``dc_t = dc`` from the step after (``grad_cy``) ``+ dh_t ∘ o ∘
    (1 − tanh² c_t)``; the gates' gradient ``dz_t = [dc_t∘g∘i(1−i), dc_t∘c_{t−1}∘f(1−f),
    dc_t∘i∘(1−g²), dh_t∘tanh(c_t)∘o(1−o)]``; what goes back a step is ``dz_t W_hh`` and ``dc_t ∘ f``.
    Each input's gradient is a sum over ``dz``: ``grad_input_t = dz_t W_ih``, ``grad_W_ih =
    Σ_t dz_tᵀ x_t``, ``grad_W_hh = Σ_t dz_tᵀ h_{t−1}``, ``grad_b = Σ_t Σ_batch dz_t``,
    ``grad_hx = dz W_hh`` and ``grad_cx = dc ∘ f`` at the first step. The gates are recomputed
    here in float64 from the saved values once per node (``Ctx.memo``); the kernel's own copy
    of them, its workspace, is scratch that is not kept (NOTE [a kernel's workspace] in
    capture/tensordoc.py). A packed sequence (``batch_sizes``) is not written here: such a node
    says so instead of a number.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported
from gradtrace.analysis.explain.tensors import Flat, fmt, fmt_operand, sum_of_products, unravel

_LSTM = 2
"""``mode`` of an LSTM layer (``mkldnn_rnn_layer``'s RNN kinds: 0 tanh, 1 relu, 2 LSTM, 3 GRU)."""


def _array(t: Flat) -> np.ndarray:
    return np.asarray(t.values, dtype=np.float64).reshape(t.shape)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # exp of a large −x is inf, and σ is then 0, as it should be
        out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _through_time(ctx: Ctx) -> dict[str, Any]:
    """The forward recomputed and the backward through time (NOTE [an LSTM layer's rule])."""
    found: dict[str, Any] | None = ctx.memo.get("lstm")
    if found is not None:
        return found
    if int(ctx.arg("mode", _LSTM)) != _LSTM:
        raise Unsupported("only an LSTM layer's rule is written here")
    if ctx.arg("batch_sizes"):
        raise Unsupported("a packed sequence (batch_sizes) is not written here")
    x = _array(ctx.saved["input"])
    w_ih, w_hh = _array(ctx.saved["weight0"]), _array(ctx.saved["weight1"])
    hidden = w_hh.shape[1]
    b = np.zeros(w_ih.shape[0])
    for name in ("weight2", "weight3"):  # the biases, where the layer has them
        if name in ctx.saved and ctx.saved[name].shape == (w_ih.shape[0],):
            b = b + _array(ctx.saved[name])
    steps, batch = x.shape[0], x.shape[1]
    h0 = _array(ctx.saved["hx_"]).reshape(batch, hidden)
    c0 = _array(ctx.saved["cx_"]).reshape(batch, hidden)
    order = list(range(steps))[::-1] if ctx.arg("reverse", False) else list(range(steps))
    h_prev, c_prev, gates, cs = {}, {}, {}, {}
    h, c = h0, c0
    for t in order:
        z = x[t] @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = (_sigmoid(z[:, :hidden]), _sigmoid(z[:, hidden:2 * hidden]),
                      np.tanh(z[:, 2 * hidden:3 * hidden]), _sigmoid(z[:, 3 * hidden:]))
        h_prev[t], c_prev[t] = h, c
        c = f * c + i * g
        h = o * np.tanh(c)
        gates[t], cs[t] = (i, f, g, o), c

    def received(k: int, shape: tuple[int, ...]) -> np.ndarray:
        gs = ctx.gs if ctx.gs else (ctx.g,)
        got = gs[k] if k < len(gs) else None
        return np.zeros(shape) if got is None else _array(got).reshape(shape)

    d_out = received(0, (steps, batch, hidden))
    dh, dc = received(1, (batch, hidden)), received(2, (batch, hidden))
    dz = np.zeros((steps, batch, 4 * hidden))
    cell = dc
    for t in reversed(order):
        i, f, g, o = gates[t]
        tc = np.tanh(cs[t])
        dh = dh + d_out[t]
        dc = dc + dh * o * (1.0 - tc * tc)
        dz[t] = np.concatenate([dc * g * i * (1.0 - i), dc * c_prev[t] * f * (1.0 - f),
                                dc * i * (1.0 - g * g), dh * tc * o * (1.0 - o)], axis=1)
        cell = dc
        dh, dc = dz[t] @ w_hh, dc * f
    first = order[0]
    found = {"x": x, "w_ih": w_ih, "w_hh": w_hh, "dz": dz, "h_prev": h_prev, "first": first,
             "f_first": gates[first][1], "dc_first": cell}
    ctx.memo["lstm"] = found
    return found


def _lstm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    bt = _through_time(ctx)
    dz: np.ndarray = bt["dz"]
    steps, batch, gates = dz.shape
    shape = ctx.in_shapes[i] or ()
    at = unravel(k, shape)
    if i == 0:  # grad_input[t, n, c] = Σ_k dz[t, n, k] · W_ih[k, c]
        t, n, col = at
        return sum_of_products([(float(dz[t, n, r]), float(bt["w_ih"][r, col])) for r in range(gates)])
    if i in (1, 2):  # grad_W[r, c] = Σ_t Σ_n dz[t, n, r] · (x or h_{t−1})[t, n, c]
        r, col = at
        return sum_of_products([(float(dz[t, n, r]), float(bt["x"][t, n, col] if i == 1 else bt["h_prev"][t][n, col]))
                       for t in range(steps) for n in range(batch)])
    if i in (3, 4):  # grad_b[r] = Σ_t Σ_n dz[t, n, r]
        (r,) = at
        parts = [float(dz[t, n, r]) for t in range(steps) for n in range(batch)]
        return " + ".join(fmt_operand(p) if j else fmt(p) for j, p in enumerate(parts[:4])) + \
            (" + …" if len(parts) > 4 else ""), math.fsum(parts)
    n, col = at[-2], at[-1]
    first = bt["first"]
    if i == 5:  # grad_hx[n, c] = Σ_k dz_first[n, k] · W_hh[k, c]
        return sum_of_products([(float(dz[first, n, r]), float(bt["w_hh"][r, col])) for r in range(gates)])
    # grad_cx[n, c] = dc_first[n, c] · f_first[n, c]
    dc, f = float(bt["dc_first"][n, col]), float(bt["f_first"][n, col])
    return f"{fmt(dc)}·{fmt_operand(f)}", dc * f


_ALL = ("input", "weight0", "weight1", "hx_", "cx_")
_DZ = ("dz[t]: the gates' gradient at step t by backpropagation through time, with i, f, g, o "
       "recomputed from the saved input, weights, hx and cx")
BACKWARD_RULES: dict[str, Rule] = {
    "MkldnnRnnLayerBackward0": Rule(
        (f"grad_input[t] = dz[t] W_ih  (W_ih = weight0;  {_DZ})",
         "grad_weight0 = Σ_t dz[t]ᵀ input[t]  (W_ih)",
         "grad_weight1 = Σ_t dz[t]ᵀ h[t−1]  (W_hh)",
         "grad_weight2 = Σ_t Σ_batch dz[t]  (b_ih)",
         "grad_weight3 = Σ_t Σ_batch dz[t]  (b_hh)",
         "grad_hx_ = dz[first] W_hh  (the first step's)",
         "grad_cx_ = dc[first] ∘ f[first]  (the first step's cell gradient through its forget gate)"),
        (_ALL,), _lstm, ("mode", "reverse")),
}
