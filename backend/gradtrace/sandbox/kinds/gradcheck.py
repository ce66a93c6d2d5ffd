"""Kind ``gradcheck``: re-run a snippet with one element nudged at a time, answer the check.

Child side: :func:`gradtrace.gradcheck.job.run_gradcheck` (it imports torch; the zygote
has loaded torch, and the job imports the gradcheck package inside ``handle``). Web side: the answer is a
:class:`gradtrace.schema.gradcheck.GradcheckResult`, validated here and made final: its
canonical JSON, the id their hash. The supervisor's own answers (a time, memory or output
limit, a crash) are results too, with the verdict ``inconclusive`` and the limit as their
reason, so the route always has one model to answer.
"""

from __future__ import annotations

from pydantic import Field, ValidationError

from gradtrace.jobs import GRADCHECK, Job, JobResult, Params
from gradtrace.sandbox.kinds.registry import JobKind
from gradtrace.sandbox.protocol import SNIPPET_FILENAME
from gradtrace.sandbox.wire import Answer
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.gradcheck import DEFAULT_MAX_ELEMENTS, MAX_ELEMENTS, GradcheckResult, Mode, Reason, TargetSpec


class GradcheckParams(Params):
    """What the check needs besides the code and the seed the snippet re-runs under."""

    target: TargetSpec
    max_elements: int = Field(default=DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS)
    sample_seed: int = Field(default=0, ge=0)
    """Which elements to sample."""
    time_budget_s: float | None = Field(default=None, gt=0)
    """What the re-runs plan to use of the time limit (fewer elements rather than the limit)."""
    mode: Mode = "backward"


def handle(job: Job) -> Answer:
    """Run the check in the locked-down child (compiled as ``<snippet>``, so limits stop it)."""
    from gradtrace.gradcheck.job import run_gradcheck

    assert isinstance(job.params, GradcheckParams)
    return Answer(run_gradcheck({**job.params.model_dump(mode="json"), "code": job.code, "seed": job.seed},
                                filename=SNIPPET_FILENAME))


def answer(result: GradcheckResult) -> JobResult:
    """``result`` as the runner's final answer: its canonical bytes, its id their hash."""
    doc = result.model_dump(mode="json")
    doc["id"], canonical = canonical_with_id(doc)  # the hash leaves out whatever "id" held
    return JobResult(GRADCHECK, canonical, doc["id"], result.status, result.schema_version, doc)


def validate(job: Job, raw: Answer) -> JobResult | None:
    if raw.attachment is not None:
        return None
    try:
        result = GradcheckResult.model_validate_json(raw.document)
    except (ValueError, ValidationError, RecursionError):
        return None
    if result.status not in ("ok", "refused"):
        return None  # only the supervisor says that a limit was hit
    return answer(result)


def failed(job: Job, status: str, message: str, stdout: str) -> JobResult:
    params = job.params if isinstance(job.params, GradcheckParams) else None
    return answer(GradcheckResult(
        verdict="inconclusive", status=status, message=message,  # type: ignore[arg-type]
        mode=params.mode if params else "backward",
        max_elements=params.max_elements if params else DEFAULT_MAX_ELEMENTS,
        reasons=[Reason(code="limit", message=f"the re-runs did not finish: {message}")]))


KIND = JobKind(GRADCHECK, params=GradcheckParams, handle=handle, validate=validate, failed=failed)
