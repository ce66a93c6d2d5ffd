"""The sandbox child's side of a ``gradcheck`` job: re-run the snippet, answer the result's JSON.

The job carries the snippet, its seed, the target (a :class:`TargetSpec`), ``max_elements`` and
``mode`` (``forward``: the target Function's ``jvp``).
A target that is not in the program answers a result with status ``refused`` and the reason
in ``message`` (the web process turns it into a 422); everything the snippet does is a
verdict with reasons, never an exception.
"""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.gradcheck.answer import answer_bytes
from gradtrace.gradcheck import TargetError, check_snippet
from gradtrace.schema.gradcheck import DEFAULT_MAX_ELEMENTS, GradcheckResult, Mode, TargetSpec


def run_gradcheck(job: dict[str, Any], *, filename: str = "<snippet>") -> bytes:
    """``job`` -> the answer's bytes (NOTE [the answer's bytes] in ``analysis/gradcheck/answer.py``;
    status ``refused`` for a bad target)."""
    try:
        spec = TargetSpec.model_validate(job.get("target") or {})
        sample = job.get("sample_seed")
        budget = job.get("time_budget_s")
        mode: Mode = "forward" if job.get("mode") == "forward" else "backward"
        result = check_snippet(str(job["code"]), spec, seed=int(job.get("seed") or 0),
                               max_elements=int(job.get("max_elements", DEFAULT_MAX_ELEMENTS)), filename=filename,
                               sample_seed=None if sample is None else int(sample),
                               time_budget_s=float(budget) if isinstance(budget, (int, float)) else None,
                               mode=mode)
    except (TargetError, ValueError) as e:
        return _refused(str(e).split("\n")[0])
    except SyntaxError as e:
        return _refused(f"the snippet does not compile: {e.msg} (line {e.lineno})")
    return answer_bytes(result)


def _refused(message: str) -> bytes:
    return answer_bytes(GradcheckResult(verdict="inconclusive", status="refused", message=message))
