"""The sandbox child's side of a ``gradcheck`` job: re-run the snippet, answer the result's JSON.

The job carries the snippet, its seed, the target (a :class:`TargetSpec`) and ``max_elements``.
A target that is not in the program answers ``{"error": ...}`` (the web process turns it into
a 422); everything the snippet does is a verdict with reasons, never an exception.
"""

from __future__ import annotations

import json
from typing import Any

from gradtrace.numcheck import TargetError, check_snippet
from gradtrace.schema.gradcheck import DEFAULT_MAX_ELEMENTS, TargetSpec


def run_gradcheck(job: dict[str, Any], *, filename: str = "<snippet>") -> bytes:
    """``job`` -> the JSON bytes of a GradcheckResult, or of ``{"error": message}``."""
    try:
        spec = TargetSpec.model_validate(job.get("target") or {})
        result = check_snippet(str(job["code"]), spec, seed=int(job.get("seed") or 0),
                               max_elements=int(job.get("max_elements", DEFAULT_MAX_ELEMENTS)), filename=filename)
    except (TargetError, ValueError) as e:
        return json.dumps({"error": str(e).split("\n")[0]}).encode()
    except SyntaxError as e:
        return json.dumps({"error": f"the snippet does not compile: {e.msg} (line {e.lineno})"}).encode()
    return result.model_dump_json().encode()
