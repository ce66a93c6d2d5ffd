"""A job kind that exists only in the tests: ``echo`` runs the code and answers one of its names.

It follows NOTE [adding a job kind] (``gradtrace/jobs.py``) to the letter, so the seam
is proved with a second kind that nothing in the package knows: the pool and the queue must
carry it without a line of theirs changing. A runner is given it by this file (``kind_files``:
:func:`gradtrace.sandbox.kinds.load_kind_file` reads its ``KIND``), in the test process and in
the zygote (``ZygoteConfig.kind_files``). Params: :class:`EchoParams`; the answer is
``{"id", "kind", "schema_version", "status": "ok", "name", "value", "device", "seed"}`` and,
when ``attach`` names a variable holding ``bytes``, those bytes as the answer's attachment
(raw, beside the JSON: NOTE [answer frames] in ``gradtrace/sandbox/wire.py``).
"""

from __future__ import annotations

import json
from typing import Any

from gradtrace.jobs import Job, JobResult, Params
from gradtrace.sandbox.kinds import JobKind
from gradtrace.sandbox.protocol import SNIPPET_FILENAME
from gradtrace.sandbox.wire import Answer
from gradtrace.schema.canonical import canonical_with_id

NAME = "echo"
SCHEMA_VERSION = 1


class EchoParams(Params):
    name: str
    """The variable whose value the answer holds."""
    attach: str | None = None
    """A variable holding ``bytes``: they are the answer's attachment."""


def handle(job: Job) -> Answer:
    """Child side: run the code (compiled as ``<snippet>``, so time limits stop it), answer a name."""
    assert isinstance(job.params, EchoParams)
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(job.code, SNIPPET_FILENAME, "exec"), scope)  # the sandbox is the point
    name = job.params.name
    attachment = None if job.params.attach is None else bytes(scope[job.params.attach])
    return Answer(json.dumps({"id": "", "kind": NAME, "schema_version": SCHEMA_VERSION, "status": "ok",
                              "name": name, "value": scope.get(name)}).encode(), attachment)


def validate(job: Job, answer: Answer) -> JobResult | None:
    """Web side: trust nothing; the job decides device and seed; the id is the content hash."""
    assert isinstance(job.params, EchoParams)
    try:
        doc = json.loads(answer.document)
    except ValueError:
        return None
    if (not isinstance(doc, dict) or doc.get("kind") != NAME or doc.get("status") != "ok"
            or set(doc) != {"id", "kind", "schema_version", "status", "name", "value"}
            or doc["name"] != job.params.name or doc["schema_version"] != SCHEMA_VERSION
            or (answer.attachment is None) != (job.params.attach is None)):
        return None
    doc.update(device=job.device, seed=job.seed)
    doc["id"], canonical = canonical_with_id(doc)
    return JobResult(NAME, canonical, doc["id"], "ok", SCHEMA_VERSION, doc, attachment=answer.attachment)


KIND = JobKind(NAME, params=EchoParams, handle=handle, validate=validate)  # ``failed``: failure_result
