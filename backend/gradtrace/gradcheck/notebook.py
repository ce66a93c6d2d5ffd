"""Gradient checks in the notebook widget: the checker a widget calls when its "Check gradient"
button is pressed or ``w.check(...)`` is called (``notebook/widget.py`` asks, this answers).

The widget (notebook layer) may not import capture, so this module, which records, hands it
the checker: :func:`enable_checks`. The run's code is re-run *in this process* under the
run's seed, with a fresh namespace: a cell that needs variables of earlier cells answers
``inconclusive`` with the NameError as its reason.
"""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.gradcheck import for_the_rerun, place_on_run, target_for_node
from gradtrace.gradcheck import check_snippet
from gradtrace.notebook.widget import GradtraceWidget
from gradtrace.schema.gradcheck import DEFAULT_MAX_ELEMENTS, GradcheckResult, TargetSpec


def check_widget_node(w: GradtraceWidget, target: Any, *, max_elements: int = DEFAULT_MAX_ELEMENTS,
                      seed: int = 0, pass_index: int | None = None) -> GradcheckResult:
    """Check ``target`` (a node id or name, ``"every parameter"``, or a TargetSpec) of ``w``'s run,
    in backward pass ``pass_index`` (``passes[].index``; by default the node's own pass, NOTE
    [which backward pass a node belongs to] in ``analysis/gradcheck/runs.py``)."""
    doc = w.document
    code = doc.get("code")
    if not code:
        raise ValueError("this run carries no code to re-run")
    if isinstance(target, TargetSpec):
        spec = target if pass_index is None else target.model_copy(update={"pass_index": pass_index})
    elif target == "every parameter":
        spec = TargetSpec(kind="parameters", pass_index=pass_index)
    elif target is None:
        raise ValueError("select a node (or name one) to check")
    else:
        nodes = doc.get("graph", {}).get("nodes", [])
        node = next((n for n in nodes if n.get("id") == target), None) or next(
            (n for n in nodes if n.get("name") == target), None)
        if node is None:
            raise KeyError(f"no node with id or name {target!r} in this run")
        spec = target_for_node(doc, node["id"], pass_index)
    spec = for_the_rerun(doc, spec)
    run_seed = doc.get("seed")
    result = check_snippet(code, spec, seed=run_seed if isinstance(run_seed, int) else None,
                           max_elements=max_elements, sample_seed=seed)
    return place_on_run(doc, result)


def enable_checks(w: GradtraceWidget) -> GradtraceWidget:
    """Let ``w`` check gradients (its inspector shows the Check buttons' answers)."""
    w.checker = check_widget_node
    return w
