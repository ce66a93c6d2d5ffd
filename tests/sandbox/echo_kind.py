"""A job kind that exists only in the tests: ``echo`` runs the code and answers one of its names.

It follows NOTE [adding a job kind] (``gradtrace/jobs.py``) to the letter, so the seam is proved
with a second kind that nothing in the package knows: the pool and the queue must carry it
without a line of theirs changing. It is loaded from this file by
:func:`gradtrace.sandbox.kinds.load_kind_file`, in the test process and in the zygote
(``ZygoteConfig.kind_files``). ``params``: ``{"name": <a variable the code sets>}``; the answer
is ``{"id", "kind", "schema_version", "status": "ok", "name", "value", "device", "seed"}``.
"""

from __future__ import annotations

import json
from typing import Any

from gradtrace.jobs import Job, JobResult
from gradtrace.sandbox.kinds import ChildJob, JobKind, register
from gradtrace.schema.canonical import canonical_with_id

NAME = "echo"
SCHEMA_VERSION = 1


def handle(job: ChildJob) -> bytes:
    """Child side: run the code (compiled as ``<snippet>``, so time limits stop it), answer a name."""
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(job.code, job.filename, "exec"), scope)  # the sandbox is the point
    name = str(job.params["name"])
    return json.dumps({"id": "", "kind": NAME, "schema_version": SCHEMA_VERSION, "status": "ok",
                       "name": name, "value": scope.get(name)}).encode()


def validate(job: Job, raw: bytes) -> JobResult | None:
    """Web side: trust nothing; the job decides device and seed; the id is the content hash."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if (not isinstance(doc, dict) or doc.get("kind") != NAME or doc.get("status") != "ok"
            or set(doc) != {"id", "kind", "schema_version", "status", "name", "value"}
            or doc["name"] != job.params.get("name") or doc["schema_version"] != SCHEMA_VERSION):
        return None
    doc.update(device=job.device, seed=job.seed)
    doc["id"], canonical = canonical_with_id(doc)
    return JobResult(NAME, canonical, doc["id"], "ok", SCHEMA_VERSION, doc)


register(JobKind(NAME, handle=handle, validate=validate))  # ``failed``: the default failure_result
