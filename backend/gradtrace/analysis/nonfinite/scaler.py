"""A non-finite gradient that the program's GradScaler already deals with.

NOTE [a NaN GradScaler skips]
    Mixed-precision training scales the loss up (``GradScaler``, ``init_scale`` 2**16) so that
    float16 gradients do not underflow; when the scaled gradients overflow instead, the scaler
    finds the infinity or NaN in ``scaler.step``, skips the optimizer's step, and lowers its
    scale (``backoff_factor``) for the next iteration. A few skipped steps at the start of
    training are how it finds its scale, not a fault, and the first NaN entry says so rather
    than stand alone as an error. It is said only where the document shows it: the snippet
    makes a ``GradScaler``, every backward pass reached every trained leaf (so the n-th
    accumulation of each is the n-th pass), and no leaf's value changed after the pass whose
    gradients were not finite (``Node.value_steps``: NOTE [a leaf's value around each step] in
    capture/valuesteps.py), while it did after some other pass, or after none when every pass
    overflowed. ``tests/analysis/test_scaler_skips.py`` holds the skipped iterations to the
    ones a bare run's scaler backed off in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView, nonfinite_kind

_SCALER = re.compile(r"\bGradScaler\s*\(")


def _scaler_line(code: str) -> int | None:
    """The first line that makes a GradScaler (comments aside)."""
    return next((i for i, text in enumerate(code.splitlines(), 1) if _SCALER.search(text.split("#", 1)[0])), None)


def skipped_passes(view: DocView) -> list[int] | None:
    """The backward passes (their indices) whose gradients were not finite and after which no
    trained leaf changed; None when the document cannot tell (NOTE [a NaN GradScaler skips])."""
    passes = [p for p in view.doc.get("passes") or [] if p.get("within") is None]
    leaves = [n for n in view.tensor_nodes if n.get("role") == "leaf" and n.get("grad_history")]
    if len(passes) < 1 or not leaves or any(len(n["grad_history"]) != len(passes) for n in leaves):
        return None
    stepped = {int(s["at"]) for n in leaves for s in n.get("value_steps") or []}
    bad = [i for i in range(len(passes)) if any(nonfinite_kind(n["grad_history"][i]) for n in leaves)]
    skipped = [i for i in bad if i + 1 not in stepped]
    if not skipped or (not stepped and len(bad) < len(passes)):
        return None  # no step seen anywhere, yet some pass was finite: no optimizer this can speak for
    return skipped


def handled_by_scaler(view: DocView, entry: Mapping[str, Any]) -> str | None:
    """What the program's GradScaler did about the backward NaN or infinity of ``entry`` (its
    first non-finite entry), or None when it did nothing the document shows."""
    line = _scaler_line(str(view.doc.get("code") or ""))
    if line is None or entry.get("phase") != "backward" or entry.get("pass") is None:
        return None
    skipped = skipped_passes(view)
    if skipped is None or entry["pass"] not in skipped:
        return None
    total = len([p for p in view.doc.get("passes") or [] if p.get("within") is None])
    where = f"GradScaler (line {line}) found it and skipped the optimizer step after this backward pass: " \
            "no parameter changed, and it lowers its scale for the next iteration."
    if len(skipped) == total:
        return (f"{where} It skipped every one of the {total} iterations, so nothing trained: its scale never came "
                "down far enough. Start it lower (init_scale), or look at why the gradients are this large.")
    shown = ", ".join(str(i + 1) for i in skipped[:8]) + (" …" if len(skipped) > 8 else "")
    return (f"{where} It skipped {len(skipped)} of {total} iterations ({shown}); the others trained. A few skips "
            "at the start are how it finds its scale; many, or late ones, mean the gradients keep overflowing "
            "float16.")
