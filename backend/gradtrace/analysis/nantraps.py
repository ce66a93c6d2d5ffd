"""The patterns behind a NaN (or inf) made in backward: cause, trap and fix, by node names.

One table for the run's NaN panel (``analysis/nonfinite.py``, from the document) and for the
gradient check (``gradcheck/nonfinite.py``, from the live graph): both know the node
that made the value and the nodes that consumed its output in forward, and nothing more is
needed to tell the patterns the docs and forums name apart. Torch-free.

NOTE [the unselected branch]
    ``torch.where(c, f(x), y)`` (or ``masked_fill``, or indexing ``f(x)[mask]``) computes
    ``f(x)`` everywhere; its backward sends 0 to ``f``'s unselected elements, and ``f``'s
    backward multiplies that 0 by its local derivative, which is inf or nan exactly where ``f``
    was undefined there: 0 × inf = nan. The fix is to make the unselected inputs safe before
    ``f`` sees them.
"""

from __future__ import annotations

from dataclasses import dataclass

MASKING = {"WhereBackward0": "torch.where", "MaskedFillBackward0": "masked_fill",
           "MaskedFillBackward1": "masked_fill", "MaskedScatterBackward0": "masked_scatter"}
_INDEX = {"IndexBackward0", "MaskedSelectBackward0"}
_DIV = {"DivBackward0", "DivBackward1", "ReciprocalBackward0"}
_NORMS = {"NormBackward0", "NormBackward1", "NormBackward2", "LinalgVectorNormBackward0"}
_LOGS = {"LogBackward0", "Log2Backward0", "Log10Backward0", "XlogyBackward0"}
_ARCS = {"AcosBackward0": "acos", "AsinBackward0": "asin"}


@dataclass(frozen=True)
class Trap:
    cause: str
    """The arithmetic that made it, in words."""
    trap: str
    """The pattern behind it."""
    fix: str
    """The fix, as code."""


def _op(name: str) -> str:
    return name.removesuffix("Backward0").removesuffix("Backward1").lower()


def trap_for(producer: str, consumers: list[str], near: list[str] | None = None) -> Trap | None:
    """The pattern for a non-finite gradient made by ``producer`` whose forward output was
    consumed by ``consumers`` (node names), ``near``: the nodes up to three steps after it in
    forward (where an infinite slope that the producer turned into NaN comes from: a norm
    written by hand is ``sqrt(sum(w ** 2))``, and the NaN is made by the square); None when
    no pattern is known."""
    near = list(consumers) + list(near or [])
    op = _op(producer)
    masking = next((MASKING[c] for c in consumers if c in MASKING), None)
    if masking is not None:
        if masking == "torch.where":
            fix = (f"# where it is not used, give {op} a value it accepts\n"
                   "safe = torch.where(mask, x, torch.ones_like(x))\n"
                   f"y = torch.where(mask, torch.{op}(safe), 0.0)")
        else:
            fix = (f"# where it is filled, give {op} a value it accepts\n"
                   "safe = x.masked_fill(mask, 1.0)\n"
                   f"y = torch.{op}(safe).masked_fill(mask, 0.0)")
        return Trap(cause=f"0 × inf: {op}'s local derivative is infinite where it was undefined",
                    trap=f"{masking} computes both branches: its backward sends 0 to the elements of "
                         f"{op}'s result it did not select, and {op}'s backward turns 0 × inf into NaN "
                         "there. Make the unselected inputs safe before the op sees them.", fix=fix)
    if producer in _DIV and any(c in _INDEX for c in consumers):
        return Trap(cause="0 / 0: division's backward divides the 0 it receives by the zero divisor",
                    trap="(x / div)[div != 0] divides everywhere and then keeps the good elements: "
                         "indexing's backward sends 0 to the dropped ones, and division's backward "
                         "computes 0 / 0 and 0 × inf there. Mask the divisor before dividing.",
                    fix="safe = torch.where(div != 0, div, torch.ones_like(div))\ny = (x / safe)[div != 0]")
    if producer in _DIV:
        hide = " nan_to_num hides the forward's NaN, not the backward's." if "NanToNumBackward0" in consumers \
            else ""
        return Trap(cause="a division by zero: the derivative of x / d is 1 / d and −x / d², infinite at d = 0",
                    trap="a denominator that reaches exactly zero makes its gradient 0 / 0 or inf × 0." + hide,
                    fix="safe = torch.where(d != 0, d, torch.ones_like(d))\nr = torch.where(d != 0, x / safe, 0.0)")
    if producer in _NORMS or "SqrtBackward0" in near or producer == "SqrtBackward0" \
            or any(c in _NORMS for c in near):
        return Trap(cause="0 × inf: the norm's (or sqrt's) slope is infinite at zero, 0 / 0 for a norm's x / ‖x‖",
                    trap="a norm (or sqrt) of an all-zero vector has no gradient: torch computes x / ‖x‖ = "
                         "0 / 0. Keep the argument away from zero.",
                    fix="length = torch.sqrt((w ** 2).sum() + 1e-12)")
    if producer in _LOGS or any(c in _LOGS for c in near):
        return Trap(cause="1 / x: log's derivative is infinite at 0, and past float32's range for x below "
                          "about 3e-39",
                    trap="log of a value clamped (or rounded) to exactly 0 is −inf, and its gradient 1 / 0 "
                         "is inf; a value that is tiny but not 0 (a probability that underflowed) makes 1 / x "
                         "overflow to inf too: clamping to 0 does not help, clamp to a small positive number.",
                    fix="logp = torch.log(p.clamp_min(1e-12))")
    arc = _ARCS.get(producer) or next((_ARCS[c] for c in near if c in _ARCS), None)
    if arc is not None:
        return Trap(cause=f"inf × 0: {arc}'s derivative ∓1 / √(1 − x²) is infinite at ±1",
                    trap=f"{arc} of exactly ±1 (the cosine of identical or opposite vectors) has an infinite "
                         "slope. Keep the argument strictly inside (−1, 1).",
                    fix=f"angle = torch.{arc}(c.clamp(-1 + 1e-7, 1 - 1e-7))")
    return None
