"""Kind ``gradcheck``: re-run a snippet with one element nudged at a time, answer the check.

Child side: :func:`gradtrace.gradcheck.job.run_gradcheck` (it imports torch; the zygote
has loaded torch, and the job imports the gradcheck package inside ``handle``). Web side: the answer is a
:class:`gradtrace.schema.gradcheck.GradcheckResult`, validated here; the supervisor's own
answers (a time, memory or output limit, a crash) are results too, with the verdict
``inconclusive`` and the limit as their reason, so the route always has one model to answer.
``params``: ``target`` (a TargetSpec), ``max_elements``, ``sample_seed``, ``mode`` (``backward``
or ``forward``: a custom Function's ``jvp``).
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from gradtrace.jobs import Job, JobResult
from gradtrace.sandbox.kinds.registry import ChildJob, JobKind, register
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.gradcheck import GradcheckResult, Reason

GRADCHECK = "gradcheck"


def handle(job: ChildJob) -> bytes:
    """Run the check in the locked-down child (compiled as ``job.filename``, so limits stop it)."""
    from gradtrace.gradcheck.job import run_gradcheck

    return run_gradcheck({**job.params, "code": job.code, "seed": job.seed}, filename=job.filename)


def _result(result: GradcheckResult) -> JobResult:
    doc = result.model_dump(mode="json")
    doc["id"], canonical = canonical_with_id(doc)  # the hash leaves out whatever "id" held
    return JobResult(GRADCHECK, canonical, doc["id"], result.status, result.schema_version, doc)


def validate(job: Job, raw: bytes) -> JobResult | None:
    try:
        result = GradcheckResult.model_validate(json.loads(raw))
    except (ValueError, ValidationError, RecursionError):
        return None
    if result.status not in ("ok", "refused"):
        return None  # only the supervisor says that a limit was hit
    return _result(result)


def failed(job: Job, status: str, message: str, stdout: str) -> JobResult:
    max_elements = job.params.get("max_elements")
    return _result(GradcheckResult(
        verdict="inconclusive", status=status, message=message,  # type: ignore[arg-type]
        mode="forward" if job.params.get("mode") == "forward" else "backward",
        max_elements=max_elements if isinstance(max_elements, int) else 64,
        reasons=[Reason(code="limit", message=f"the re-runs did not finish: {message}")]))


register(JobKind(GRADCHECK, handle=handle, validate=validate, failed=failed))
