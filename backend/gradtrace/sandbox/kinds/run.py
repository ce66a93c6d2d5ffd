"""Kind ``run``: record a snippet's autograd graph and answer its run document.

Child side: :func:`gradtrace.capture.run_snippet` (the zygote has imported capture and torch).
Web side: :func:`gradtrace.sandbox.outcome.validate_result` and
:func:`~gradtrace.sandbox.outcome.supervisor_document`.
"""

from __future__ import annotations

from gradtrace.jobs import RUN, Job, JobResult
from gradtrace.sandbox.kinds.registry import ChildJob, JobKind, register
from gradtrace.sandbox.outcome import supervisor_document, validate_result
from gradtrace.schema.canonical import CanonicalDocument


def handle(job: ChildJob) -> bytes:
    """Run the snippet through capture and return the document's canonical JSON."""
    from gradtrace.capture import run_snippet  # imported by the zygote
    from gradtrace.schema.canonical import canonical_json

    doc = run_snippet(job.code, device=job.device, seed=job.seed, max_nodes=job.max_nodes,
                      max_events=job.max_events, output_bytes=job.output_bytes, filename=job.filename,
                      json_parts=True,  # only serialised below: graph and events stay the core's JSON
                      analysis=False)  # the web process analyses what it validated (NOTE [one analysis])
    # Data for the web process, which validates it and gives it its id (NOTE [who assigns the
    # id] in gradtrace/capture/document.py): the graph and events are the core's JSON.
    return canonical_json({**doc, "id": ""})


def result(doc: CanonicalDocument) -> JobResult:
    """A validated run document as the runner's typed result."""
    return JobResult(RUN, doc.canonical, str(doc["id"]), str(doc["status"]), int(doc["schema_version"]), doc)


def validate(job: Job, raw: bytes) -> JobResult | None:
    doc = validate_result(job, raw)
    return None if doc is None else result(doc)


def failed(job: Job, status: str, message: str, stdout: str) -> JobResult:
    return result(supervisor_document(job, status, message, stdout))


register(JobKind(RUN, handle=handle, validate=validate, failed=failed))
