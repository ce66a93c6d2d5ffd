"""Saved tensors the tensor file does not hold, worked out from the forward values it does.

NOTE [saved tensors worked out from the forward values]
    Some tensors a node saves are neither a recorded node's output nor a leaf: layer norm's
    per-row ``mean`` and ``rstd`` (outputs autograd does not track), ``masked_fill``'s mask and
    an embedding's indices (data without gradient). Where the document has no inline values
    for them, they follow from the node's input and output, which the file keeps:

    * layer norm: ``mean`` is the row's mean of the input; ``rstd`` is the least-squares factor
      with ``(output − bias) / weight = (input − mean) · rstd`` over the row (float32 rounding
      of the forward, no more: ``eps`` is not saved, so it is not recomputed from the variance);
    * a mask: true where the output differs from the input; where the two agree at every
      element the mask covers, false unless the output there is the fill value seen elsewhere
      (then undecidable, and not worked out);
    * a factor of ``mul`` or the divisor of ``div`` (a dropout mask, a scale): ``out / self``
      or ``self / out``, to float32's rounding, when it has the output's shape or is one
      number; undecidable where the known operand or the output is zero or not finite;
    * indices: the row of the weight that each output row equals bit for bit (a row that
      equals several weight rows, or none, is undecidable).
"""

from __future__ import annotations

import numpy as np


def layer_norm_stats(x: np.ndarray, out: np.ndarray, m: int, weight: np.ndarray | None,
                     bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-row ``(mean, rstd)`` of a layer norm over the last ``m`` elements."""
    if m <= 0 or x.size % m or x.size != out.size:
        return None
    rows = x.reshape(-1, m)
    y = out.reshape(-1, m)
    if bias is not None:
        y = y - bias.reshape(1, m)
    if weight is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.where(weight.reshape(1, m) != 0, y / weight.reshape(1, m), 0.0)
    mean = rows.mean(axis=1)
    centred = rows - mean[:, None]
    denom = (centred * centred).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rstd = (y * centred).sum(axis=1) / denom
    if not np.all(np.isfinite(rstd)):
        return None
    return mean, rstd


def mask_from(x: np.ndarray, out: np.ndarray, out_shape: tuple[int, ...],
              mask_shape: tuple[int, ...]) -> np.ndarray | None:
    """The mask ``masked_fill`` read, broadcast from ``mask_shape`` to ``out_shape``."""
    if x.size != out.size or out.size != int(np.prod(out_shape)) or len(mask_shape) > len(out_shape):
        return None
    full_x = x.reshape(out_shape)
    o = out.reshape(out_shape)
    differs = ~((o == full_x) | (np.isnan(o) & np.isnan(full_x)))
    lead = len(out_shape) - len(mask_shape)
    axes = tuple(range(lead)) + tuple(lead + d for d, s in enumerate(mask_shape) if s == 1 and out_shape[lead + d] != 1)
    known = differs.any(axis=axes, keepdims=True).reshape(mask_shape) if axes else differs.reshape(mask_shape)
    filled = o[differs]
    if filled.size and not known.all():
        fill = filled.reshape(-1)[0]
        same = (o == fill) | (np.isnan(o) & np.isnan(fill))
        maybe = same.all(axis=axes, keepdims=True).reshape(mask_shape) if axes else same.reshape(mask_shape)
        if np.any(maybe & ~known):
            return None
    found: np.ndarray = np.asarray(known, dtype=np.float64)
    return found


def indices_from(weight: np.ndarray, out: np.ndarray, width: int) -> np.ndarray | None:
    """For each output row of ``width`` numbers, the one weight row it equals."""
    if width <= 0 or weight.size % width or out.size % width:
        return None
    table = weight.reshape(-1, width)
    rows = out.reshape(-1, width)
    found = np.empty(rows.shape[0])
    for n, row in enumerate(rows):
        hits = np.flatnonzero((table == row).all(axis=1))
        if hits.size != 1:
            return None
        found[n] = hits[0]
    return found


def factor_from(known: np.ndarray, out: np.ndarray, shape: tuple[int, ...], divisor: bool) -> np.ndarray | None:
    """The other operand of ``out = known * x`` (``divisor``: ``out = known / x``), of ``shape``
    (the output's, or one number)."""
    if known.size != out.size:
        return None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = known / out if divisor else out / known
    fine = np.isfinite(x) & (known != 0) & np.isfinite(known) & np.isfinite(out) & (out != 0)
    if int(np.prod(shape)) == 1:
        return x[fine][:1] if fine.any() else None
    if int(np.prod(shape)) != out.size:
        return None
    if divisor and not fine.all():
        return None
    # a factor of zero: the output is zero where the known operand is finite and nonzero
    zero = (out == 0) & (known != 0) & np.isfinite(known)
    if not np.all(fine | zero):
        return None
    return np.where(zero, 0.0, x)


_FIT = 1e-5
"""How far (relative to the channel's largest output) the refitted ``weight · x̂ + bias`` may
stray from the recorded output: float32 rounding of the forward, no more."""


def channel_weights(xhat: np.ndarray, out: np.ndarray, channels: int) -> np.ndarray | None:
    """Batch/group norm's per-channel ``weight`` from ``out = weight[c] · x̂ + bias[c]``, given
    ``x̂`` and ``out`` of shape (N, C, …): the least-squares slope of each channel, when the
    fit reproduces the output to float32's rounding (else, or where x̂ is constant, None)."""
    fit = _affine(xhat, out, channels)
    return None if fit is None else fit[0]


def _affine(xhat: np.ndarray, out: np.ndarray, channels: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`channel_weights`'s slopes and intercepts."""
    if xhat.shape != out.shape or xhat.ndim < 2 or xhat.shape[1] != channels:
        return None
    x = np.moveaxis(xhat, 1, 0).reshape(channels, -1)
    y = np.moveaxis(out, 1, 0).reshape(channels, -1)
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denom = (xc * xc).sum(axis=1)
    if x.shape[1] < 2 or not np.all(denom > 0) or not np.all(np.isfinite(y)):
        return None
    w = (xc * yc).sum(axis=1) / denom
    b = y.mean(axis=1) - w * x.mean(axis=1)
    err = np.abs(w[:, None] * x + b[:, None] - y).max(axis=1)
    if not np.all(err <= _FIT * np.maximum(np.abs(y).max(axis=1), 1e-30)):
        return None
    return w, b


_EPS_TRIED = (1e-5, 1e-6, 1e-12, 1e-8, 1e-3)
"""The ``eps`` values layer norms use (nn.LayerNorm's 1e-5 first): layer norm saves no eps."""


def layer_norm_refit(x: np.ndarray, out: np.ndarray, m: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """A layer norm's ``(mean, rstd, weight, bias)`` over rows of ``m`` from its input and output
    alone (its weight and bias moved by an optimizer since first met): ``rstd = 1/√(var + eps)``
    for the first ``eps`` of ``_EPS_TRIED`` with which ``weight[q] · x̂ + bias[q]`` reproduces the
    output to float32's rounding in every column (none: None)."""
    if m <= 0 or x.size % m or x.size != out.size or x.size // m < 2:
        return None
    rows, y = x.reshape(-1, m), out.reshape(-1, m)
    mean = rows.mean(axis=1)
    centred = rows - mean[:, None]
    var = (centred * centred).mean(axis=1)
    for eps in _EPS_TRIED:
        rstd = 1.0 / np.sqrt(var + eps)
        fit = _affine(centred * rstd[:, None], y, m)
        if fit is not None:
            return mean, rstd, fit[0], fit[1]
    return None


_COND = 1e3
"""The largest condition number of the patches for which a convolution's weight is refitted: the
refit's relative error is at most about this times float32's rounding of the output."""


def conv_weight(x: np.ndarray, out: np.ndarray, w_shape: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> np.ndarray | None:
    """A (not transposed) convolution's weight from its input ``x`` (N, C_in, …) and output
    (N, C_out, …): per group, the least-squares solution of ``out = patches @ weight + bias``,
    when the patches determine it (full rank, condition number at most ``_COND``) and it
    reproduces the output to float32's rounding (else None)."""
    nd = x.ndim - 2
    c_out, c_in_g, *k = w_shape
    if out.ndim != x.ndim or len(k) != nd or x.shape[1] != c_in_g * groups or out.shape[1] != c_out:
        return None
    size = out.shape[2:]
    padded = np.pad(x, [(0, 0), (0, 0), *((p, p) for p in padding)])
    taps = []
    for kk in np.ndindex(*k):
        idx = tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                    for t, d, s, o in zip(kk, dilation, stride, size, strict=True))
        taps.append(padded[(slice(None), slice(None), *idx)])  # (N, C_in, *out)
    if any(t.shape[2:] != size for t in taps):
        return None
    cols = np.stack(taps, axis=2)  # (N, C_in, K, *out)
    n_out = c_out // groups
    found = np.empty((c_out, c_in_g * len(taps)))
    for g in range(groups):
        part = cols[:, g * c_in_g:(g + 1) * c_in_g].reshape(x.shape[0], c_in_g * len(taps), -1)
        flat = np.moveaxis(part, 1, 2).reshape(-1, c_in_g * len(taps))
        a = np.hstack([flat, np.ones((flat.shape[0], 1))])
        y = np.moveaxis(out[:, g * n_out:(g + 1) * n_out].reshape(x.shape[0], n_out, -1), 1, 2).reshape(-1, n_out)
        if a.shape[0] < a.shape[1] or not np.all(np.isfinite(a)) or not np.all(np.isfinite(y)):
            return None
        sol, _, rank, sv = np.linalg.lstsq(a, y, rcond=None)
        if rank < a.shape[1] or sv[-1] <= 0 or sv[0] / sv[-1] > _COND:
            return None
        err = np.abs(a @ sol - y).max(axis=0)
        scale = np.abs(a[:, :-1]) @ np.abs(sol[:-1]) + np.abs(sol[-1])
        if not np.all(err <= 1e-5 * np.maximum(scale.max(axis=0), 1e-30)):
            return None
        found[g * n_out:(g + 1) * n_out] = sol[:-1].T
    weight: np.ndarray = found.reshape(w_shape)
    return weight
