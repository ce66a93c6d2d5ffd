"""Check exercise goals on a run document, with gradtrace's own judges. Pure: no torch.

Each goal kind reads what another part of the analysis package already found, so an exercise
is judged by the same code that shows the run: hints (``analysis/hints/catalogue.py``), the first NaN or
infinity (``analysis/nonfinite/first.py``), the comparison with a reference run
(``analysis/compare/documents.py``) and the saved-tensor memory (``analysis/compare/memory.py``). A failing goal
points at a node and its line and says why in the run's own names.

The gradient check is the one judge that needs a re-run in the sandbox: the caller (the service,
``api/goals.py``) passes its verdicts in ``gradchecks``; without one the goal is
``needs_service`` (a saved file).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gradtrace.analysis.compare import compare_documents, memory_timeline
from gradtrace.analysis.goals.parse import goal_text
from gradtrace.analysis.numbers import flatten
from gradtrace.schema.compare import Comparison
from gradtrace.schema.goals import (
    NEEDS_REFERENCE,
    Finite,
    Goal,
    GoalReport,
    GoalResult,
    GradcheckPasses,
    GradEquals,
    LossBelow,
    NoHint,
    PeakSavedBelow,
    SameGraph,
)

Doc = dict[str, Any]
_Out = Callable[..., GoalResult]
"""Makes one goal's result: ``out(status, why, node=None, line=None)``."""
RTOL, ATOL = 1e-4, 1e-6
"""float32 tolerance (NOTE [goldens on any CPU] in analysis/numbers.py): a reference recorded
on another CPU still counts as equal."""


def check_goals(doc: Doc, goals: list[Goal], *, reference: Doc | None = None,
                gradchecks: dict[int, dict[str, Any]] | None = None,
                exercise: str | None = None) -> GoalReport:
    """Every goal checked on ``doc`` (a parsed run document), in order.

    ``reference``: the reference run for the comparing goals; ``gradchecks``: by goal index,
    the service's gradient check answers (``schema/gradcheck.py``, placed on ``doc``'s ids).
    """
    comparison = None
    if reference is not None and any(g.kind in NEEDS_REFERENCE for g in goals):
        comparison = compare_documents(doc, reference)
    results = []
    for k, goal in enumerate(goals):
        result = _check(doc, goal, reference, comparison, (gradchecks or {}).get(k))
        results.append(result)
    done = bool(results) and all(r.status == "pass" for r in results) and doc.get("status") == "ok"
    return GoalReport(results=results, done=done, exercise=exercise)


def _check(doc: Doc, goal: Goal, reference: Doc | None, comparison: Comparison | None,
           gradcheck: dict[str, Any] | None) -> GoalResult:
    def out(status: str, why: str, node: str | None = None, line: int | None = None) -> GoalResult:
        return GoalResult.model_validate({"goal": goal.model_dump(mode="json"), "text": goal_text(goal),
                                          "status": status, "why": why, "node": node, "line": line})

    if isinstance(goal, NoHint):
        for hint in (doc.get("analysis") or {}).get("hints") or []:
            if hint.get("code") == goal.code:
                nodes = hint.get("nodes") or []
                return out("fail", f"{hint.get('title')}: {hint.get('message')}", nodes[0] if nodes else None,
                           hint.get("line"))
        return out("pass", f"no {goal.code} hint in this run")
    if isinstance(goal, Finite):
        found = (doc.get("analysis") or {}).get("nonfinite") or []
        if found:
            first = found[0]
            return out("fail", str(first.get("sentence") or f"a {first.get('kind')} in the {first.get('phase')} pass"),
                       first.get("node"), first.get("line"))
        return out("pass", "every recorded value and gradient is finite")
    if isinstance(goal, PeakSavedBelow):
        return _peak(doc, goal, out)
    if isinstance(goal, LossBelow):
        return _loss(doc, goal, out)
    if isinstance(goal, GradcheckPasses):
        return _gradcheck(goal, gradcheck, out)
    if reference is None or comparison is None:
        return out("unknown", "this goal compares with a reference run, and none was given")
    if isinstance(goal, SameGraph):
        return _same_graph(doc, comparison, out)
    assert isinstance(goal, GradEquals)
    return _grad_equals(doc, reference, goal, comparison, out)


def _peak(doc: Doc, goal: PeakSavedBelow, out: _Out) -> GoalResult:
    memory = memory_timeline(doc)
    if memory.peak < goal.bytes:
        return out("pass", f"peak saved-tensor memory {memory.peak:,} bytes, below {goal.bytes:,}")
    biggest = max((n for n in doc["graph"]["nodes"] if n.get("kind") == "function"),
                  key=lambda n: int(n.get("saved_bytes") or 0), default=None)
    why = f"peak saved-tensor memory {memory.peak:,} bytes (at step {memory.peak_step}), not below {goal.bytes:,}"
    if biggest is None:
        return out("fail", why)
    why += f"; the largest saver is {biggest.get('name')} ({int(biggest.get('saved_bytes') or 0):,} bytes)"
    return out("fail", why, biggest["id"], biggest.get("line"))


def _loss(doc: Doc, goal: LossBelow, out: _Out) -> GoalResult:
    passes = doc.get("passes") or []
    roots = passes[-1].get("roots") if passes else None
    if not roots:
        return out("unknown", "the run made no backward pass, so it has no loss to judge")
    node = next((n for n in doc["graph"]["nodes"] if n.get("id") == roots[0]), None)
    value = _scalar((node or {}).get("value"))
    if node is None or value is None:
        return out("unknown", "the last backward pass started from a tensor whose value was not recorded")
    name = node.get("name") or "the loss"
    if value < goal.value:
        return out("pass", f"{name} is {value:.6g} after the last step, below {goal.value:g}")
    return out("fail", f"{name} is {value} after the last step, not below {goal.value:g}", node["id"], node.get("line"))


def _gradcheck(goal: GradcheckPasses, answer: dict[str, Any] | None, out: _Out) -> GoalResult:
    if answer is None:
        return out("needs_service", f"the gradient check of {goal.function} re-runs the snippet: "
                                    "it needs the gradtrace service (run it there)")
    verdict = answer.get("verdict")
    suspect = answer.get("suspect") or {}
    reasons = answer.get("reasons") or [{}]
    message = str(suspect.get("message") or reasons[0].get("message") or answer.get("message") or "")
    if verdict == "pass":
        return out("pass", message or f"the gradient check passes on {goal.function}")
    status = "fail" if verdict == "fail" else "unknown"
    return out(status, message or f"the gradient check on {goal.function} is {verdict}",
               suspect.get("node_id"), suspect.get("line"))


def _same_graph(doc: Doc, comparison: Comparison, out: _Out) -> GoalResult:
    if comparison.same_structure and not comparison.only_a and not comparison.only_b:
        return out("pass", f"the same graph as the reference: all {len(comparison.pairs)} nodes pair up")
    if comparison.only_a:
        first = comparison.only_a[0]
        return out("fail", f"{_label(first)} (line {first.line}) is not in the reference run's graph"
                   + _more(len(comparison.only_a), len(comparison.only_b)), first.id, first.line)
    if comparison.only_b:
        first = comparison.only_b[0]
        line = _nearest_line(doc, first.line)
        return out("fail", f"the reference run has {_label(first)} (its line {first.line}) that this "
                   "run's graph lacks" + _more(0, len(comparison.only_b) - 1), None, line)
    return out("fail", comparison.summary)


def _label(node: Any) -> str:
    return str(node.name) if node.name else f"a {node.kind} node ({node.id})"


def _more(a: int, b: int) -> str:
    extra = []
    if a > 1:
        extra.append(f"{a - 1} more only here")
    if b > 0:
        extra.append(f"{b} only in the reference")
    return f" ({', '.join(extra)})" if extra else ""


def _nearest_line(doc: Doc, line: int | None) -> int | None:
    """A reference line as a line of this run's code, when the code has that many lines."""
    if line is None:
        return None
    count = len(str(doc.get("code") or "").splitlines())
    return line if 0 < line <= count else None


def _tensor(doc: Doc, name: str) -> Doc | None:
    for node in doc["graph"]["nodes"]:
        if node.get("kind") == "tensor" and (node.get("name") == name or name in (node.get("tied") or ())):
            found: Doc = node
            return found
    return None


def _grad_equals(doc: Doc, reference: Doc, goal: GradEquals, comparison: Comparison, out: _Out) -> GoalResult:
    mine, theirs = _tensor(doc, goal.tensor), _tensor(reference, goal.tensor)
    if theirs is None:
        return out("unknown", f"the reference run has no tensor named {goal.tensor} with a gradient")
    want = _history(theirs)
    if mine is None:
        return out("fail", f"{goal.tensor} never got a gradient in this run (the reference's is {_show(want[-1])})")
    got = _history(mine)
    where = mine["id"], mine.get("def_line") or mine.get("line")
    div = comparison.first_divergence
    if div is not None and div.phase == "backward":
        where = div.a, div.line_a
    for k, (g, w) in enumerate(zip(got, want, strict=False)):
        if not _close(g, w):
            step = f" after accumulation {k + 1}" if len(want) > 1 else ""
            return out("fail", f"{goal.tensor}.grad is {_show(g)}{step} where the reference's is {_show(w)}", *where)
    if len(got) != len(want):
        return out("fail", f"{goal.tensor}.grad was accumulated {len(got)} times, the reference's {len(want)} times",
                   *where)
    return out("pass", f"{goal.tensor}.grad equals the reference's ({_show(want[-1])})")


def _history(node: Doc) -> list[list[float] | None]:
    history = node.get("grad_history") or []
    if history:
        return [_flat(v) for v in history]
    return [_flat(node.get("grad"))]


def _flat(value: Doc | None) -> list[float] | None:
    """The values, or for a tensor too large to keep them its stats (min, max, mean, norm),
    which a different gradient changes too."""
    if not value:
        return None
    if value.get("values") is None:
        stats = value.get("stats")
        return flatten([stats.get(k) for k in ("min", "max", "mean", "norm")]) if stats else None
    return flatten(value["values"])


def _close(a: list[float] | None, b: list[float] | None) -> bool:
    if a is None or b is None or len(a) != len(b):
        return a is None and b is None
    scale = max((abs(y) for y in b if math.isfinite(y)), default=0.0)
    for x, y in zip(a, b, strict=True):
        if not (math.isfinite(x) and math.isfinite(y)):
            if not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
        elif abs(x - y) > ATOL + RTOL * max(abs(y), scale):
            return False
    return True


def _show(values: list[float] | None) -> str:
    if values is None:
        return "none"
    shown = [f"{v:.6g}" for v in values[:6]]
    text = ", ".join(shown) + (", …" if len(values) > 6 else "")
    return text if len(values) == 1 else f"[{text}]"


def _scalar(value: Doc | None) -> float | None:
    flat = _flat(value)
    return flat[0] if flat and len(flat) == 1 else None
