"""Rules of the matrix exponential, the Cholesky factor and its solve (an orthogonal
parametrization's ``matrix_exp``, a Gaussian process's likelihood), the determinant and the
inverse, worked out in float64 from the saved matrices, each batch's matrix on its own.

NOTE [matrix rules]
    These rules are torch's own formulas (``FunctionsManual.cpp``), for real matrices:
    - ``matrix_exp``: ``grad_self`` is the upper-right block of ``exp([[selfᵀ, grad_out],
      [0, selfᵀ]])`` (the derivative of exp along ``grad_out``, adjoint);
    - ``cholesky`` (``A = L Lᵀ``): ``grad_self = L⁻ᵀ Φ L⁻¹`` with ``Φ = ½ (P + tril(P, −1)ᵀ)``,
      ``P = tril(Lᵀ grad_out)``;
    - ``cholesky_solve`` (``X = A⁻¹ B``, ``A = L Lᵀ``): ``grad_self = A⁻¹ grad_out`` and
      ``grad_input2 = −(grad_self Xᵀ + X grad_selfᵀ) L``;
    - ``det``: ``grad_A = grad_out · cof(A)``, the cofactors (``det(A) · A⁻ᵀ`` where A is
      invertible; torch goes through an SVD where it is not, to the same matrix);
    - ``inv`` (``B = A⁻¹``): ``grad_A = −Bᵀ grad_out Bᵀ``.
    An ``upper`` factor is written here as its transpose's lower one, as torch does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from gradtrace.analysis.explain.ops import Ctx, Rule
from gradtrace.analysis.explain.tensors import Flat, fmt, sum_of_products, unravel


def _mats(t: Flat) -> np.ndarray:
    """A saved tensor as a stack of matrices: [batch, rows, cols]."""
    a = np.asarray(t.values, dtype=np.float64).reshape(t.shape)
    return a.reshape(-1, a.shape[-2], a.shape[-1])


def _expm(m: np.ndarray) -> np.ndarray:
    """exp of a square matrix: scaled to a norm of at most ½, a Taylor series to float64's
    precision, squared back."""
    norm = float(np.abs(m).sum(axis=0).max()) if m.size else 0.0
    s = max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    a = m / (2.0 ** s)
    out = np.eye(m.shape[0])
    term = np.eye(m.shape[0])
    for k in range(1, 30):
        term = term @ a / k
        out = out + term
        if np.abs(term).max() <= 1e-18 * np.abs(out).max():
            break
    for _ in range(s):
        out = out @ out
    return out


def _where(ctx: Ctx, i: int, k: int) -> tuple[int, int, int]:
    """(batch, row, column) of element ``k`` of input ``i``'s gradient."""
    shape = ctx.in_shapes[i] or ()
    at = unravel(k, shape)
    rows, cols = shape[-2], shape[-1]
    batch = (k // (rows * cols)) if len(shape) > 2 else 0
    return batch, at[-2], at[-1]


def _memo(ctx: Ctx, key: str, make: Callable[[], np.ndarray]) -> np.ndarray:
    """What a rule works out once per node (``Ctx.memo``) and reads at each element."""
    found: np.ndarray | None = ctx.memo.get(key)
    if found is None:
        found = ctx.memo[key] = make()
    return found


def _matrix_exp(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    b, r, c = _where(ctx, i, k)

    def grads() -> np.ndarray:
        a, g = _mats(ctx.saved["self"]), _mats(ctx.g)
        n = a.shape[-1]
        out = np.empty_like(a)
        for j in range(a.shape[0]):
            block = np.zeros((2 * n, 2 * n))
            block[:n, :n] = block[n:, n:] = a[j].T
            block[:n, n:] = g[j]
            out[j] = _expm(block)[:n, n:]
        return out

    value = float(_memo(ctx, "expm", grads)[b, r, c])
    n = ctx.saved["self"].shape[-1]
    return f"exp([[selfᵀ, grad_out], [0, selfᵀ]])[{r}, {n + c}]", value


def _lower(ctx: Ctx, name: str) -> np.ndarray:
    """A saved triangular factor as the lower one (an ``upper`` factor transposed)."""
    m = _mats(ctx.saved[name])
    return np.swapaxes(m, -1, -2) if ctx.arg("upper", False) else m


def _cholesky(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    b, r, c = _where(ctx, i, k)

    def grads() -> np.ndarray:
        ell, g = _lower(ctx, "L"), _mats(ctx.g)
        if ctx.arg("upper", False):
            g = np.swapaxes(g, -1, -2)
        out = np.empty_like(ell)
        for j in range(ell.shape[0]):
            p = np.tril(ell[j].T @ g[j])
            phi = 0.5 * (p + np.tril(p, -1).T)
            inv = np.linalg.inv(ell[j])
            out[j] = inv.T @ phi @ inv
        return out

    value = float(_memo(ctx, "cholesky", grads)[b, r, c])
    return f"(L⁻ᵀ Φ L⁻¹)[{r}, {c}]", value


def _cholesky_solve(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    b, r, c = _where(ctx, i, k)
    ell = _lower(ctx, "input2")
    a_inv = _memo(ctx, "a_inv", lambda: np.stack([np.linalg.inv(m @ m.T) for m in ell]))
    g = _mats(ctx.g)
    if i == 0:  # grad_self[r, c] = Σ_q A⁻¹[r, q] · grad_out[q, c]
        parts = [(float(a_inv[b, r, q]), float(g[b, q, c])) for q in range(a_inv.shape[-1])]
        return sum_of_products(parts)
    x = _mats(ctx.saved["result"])

    def common() -> np.ndarray:
        gs = a_inv @ g
        m = gs @ np.swapaxes(x, -1, -2)
        out: np.ndarray = m + np.swapaxes(m, -1, -2)
        return out

    m = _memo(ctx, "common", common)
    if ctx.arg("upper", False):  # grad_input2 = −input2 · common (input2 upper)
        u = _mats(ctx.saved["input2"])
        parts = [(float(u[b, r, q]), float(m[b, q, c])) for q in range(m.shape[-1])]
    else:  # grad_input2[r, c] = −Σ_q common[r, q] · L[q, c]
        parts = [(float(m[b, r, q]), float(ell[b, q, c])) for q in range(m.shape[-1])]
    shown, total = sum_of_products(parts)
    return f"−({shown})", -total


def _det(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_A[r, c] = grad_out · (−1)^(r+c) det(A without row r and column c)."""
    b, r, c = _where(ctx, i, k)
    a = _mats(ctx.saved["A"])[b]
    g = float(np.asarray(ctx.g.values, dtype=np.float64).reshape(-1)[b])
    minor = np.delete(np.delete(a, r, axis=0), c, axis=1)
    cof = (-1.0) ** (r + c) * (float(np.linalg.det(minor)) if minor.size else 1.0)
    return f"{fmt(g)}·{fmt(cof)}  (cofactor [{r}, {c}])", g * cof


def _inv(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_A[r, c] = −Σ_{p, q} B[p, r] · grad_out[p, q] · B[c, q]  (B = A⁻¹)."""
    b, r, c = _where(ctx, i, k)
    inv, g = _mats(ctx.saved["inverse"])[b], _mats(ctx.g)[b]
    left = inv[:, r] @ g  # Σ_p B[p, r] · grad_out[p, q], by q
    parts = [(float(left[q]), float(inv[c, q])) for q in range(inv.shape[-1])]
    shown, total = sum_of_products(parts)
    return f"−({shown})", -total


BACKWARD_RULES: dict[str, Rule] = {
    "LinalgMatrixExpBackward0": Rule(
        ("grad_self = the upper-right block of exp([[selfᵀ, grad_out], [0, selfᵀ]])",), (("self",),), _matrix_exp),
    "LinalgCholeskyExBackward0": Rule(
        ("grad_self = L⁻ᵀ Φ L⁻¹,  Φ = ½ (P + tril(P, −1)ᵀ),  P = tril(Lᵀ grad_out)  (A = L Lᵀ)",), (("L",),),
        _cholesky, ("upper",)),
    "CholeskySolveBackward0": Rule(
        ("grad_self = A⁻¹ grad_out  (A = L Lᵀ, L = input2)",
         "grad_input2 = −(grad_self Xᵀ + X grad_selfᵀ) L  (X = result)"),
        (("input2",), ("input2", "result")), _cholesky_solve, ("upper",)),
    "LinalgDetBackward0": Rule(("grad_A = grad_out · cof(A), the cofactors  (det(A) · A⁻ᵀ where A is invertible)",),
                               (("A",),), _det),
    "LinalgInvExBackward0": Rule(("grad_A = −Bᵀ grad_out Bᵀ  (B = A⁻¹, the inverse)",), (("inverse",),), _inv),
}
