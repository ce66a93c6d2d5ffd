"""The job seam: what the web process asks a runner to do, and the typed answer it gets back.

The API only ever calls :meth:`Runner.run` with a :class:`Job` and reads a :class:`JobResult`.
Two runners carry every kind of job: the local fork-server pool
(:class:`gradtrace.sandbox.pool.ForkServerPool`) and the queue of worker machines
(:class:`gradtrace.queue.runner.QueueRunner`); :mod:`gradtrace.runners`, above both, picks one
by ``GRADTRACE_RUNNER``. What each kind *does* lives in one module of
:mod:`gradtrace.sandbox.kinds`. The in-process runner used by capture's unit tests lives in
``tests/`` helpers, never here: the service never runs user code in the web process. The
form a job and an answer take between processes is :mod:`gradtrace.sandbox.wire`.

NOTE [adding a job kind]
    A kind is a name (a constant here), one module ``gradtrace/sandbox/kinds/<name>.py`` that
    defines ``KIND = JobKind(...)``, its line in ``BUILTIN`` (``sandbox/kinds/__init__.py``: the
    one list of kinds), and one route. Nothing in the pool, the queue, the zygote or the child
    changes.

    1. ``JobKind(name, params=..., handle=..., validate=..., failed=...)``
       (:mod:`gradtrace.sandbox.kinds.registry`). ``params`` is the kind's :class:`Params`
       model: frozen, strict, every field typed. The route builds it from its validated
       request; the wire form (:mod:`gradtrace.sandbox.wire`) validates it once more where a job
       enters another process (the child, the queue's worker). Keep the module's top level free
       of torch (``tests/test_torch_free.py`` imports it in the web process); import torch and
       capture inside ``handle``, where the zygote has already loaded them.
    2. ``handle(job: Job) -> Answer`` runs in the locked-down child. ``job`` is the decoded
       wire form: ``code``, ``device`` (``cpu``/``cuda``, resolved), ``seed``, the typed
       ``params`` and the ``limits``. User code must be compiled with the file name
       :data:`~gradtrace.sandbox.protocol.SNIPPET_FILENAME` (``<snippet>``): the time-limit
       handler only raises ``TimeLimitExceeded`` while a frame of that file is on the stack
       (NOTE [stop, then kill] in ``sandbox/child.py``). It returns a
       :class:`~gradtrace.sandbox.wire.Answer`: the result's JSON bytes and, beside them, an
       optional binary attachment (raw bytes, never base64 in JSON); the child writes them
       framed to the result pipe, closes it and exits.
       Whatever the user's code prints is its ``stdout`` pipe, capped by the supervisor. If
       ``TimeLimitExceeded`` escapes ``handle`` the child exits with ``EXIT_CPU_LIMIT`` or
       ``EXIT_WALL_LIMIT`` (the supervisor answers ``timeout``); any other exception exits
       ``EXIT_INTERNAL`` (``crashed``).
    3. ``validate(job: Job, answer: Answer) -> JobResult | None`` runs on the web side (in the
       web process for the pool, in the worker for the queue) and trusts nothing: the answer is
       at most ``Limits.result_bytes`` in all; parse the JSON, validate it against the kind's
       pydantic model, overwrite what the job decides (``code``, ``seed``, ``device``), give it
       its id with :func:`gradtrace.schema.canonical.canonical_with_id` and return
       ``JobResult(kind, canonical, id, status, schema_version, attachment=...)``. The answer is
       final then: the bytes served are ``canonical`` and ``id`` is their hash. Return ``None``
       for an answer that is not a valid result: the supervisor then answers ``crashed``.
    4. ``failed(job, status, message, stdout) -> JobResult`` is the supervisor's own answer
       when the child left no valid result: ``status`` is ``timeout`` (wall clock, CPU, or
       ``TimeLimitExceeded`` escaped), ``output_limit`` (output flood or result over
       ``result_bytes``), ``memory_limit`` or ``crashed`` (killed, exited, invalid result, or
       on the queue: its worker went away or was drained), ``message`` is a sentence for the
       user and ``stdout`` the capped output. The default,
       :func:`gradtrace.sandbox.kinds.registry.failure_result`, answers the canonical JSON of
       ``{"id", "kind", "schema_version": 1, "status", "message", "stdout", "device", "seed"}``.
    5. The route (``gradtrace/api/<name>.py``, included in ``api/app.py``) validates its
       request body with a strict pydantic model, builds the job with
       :func:`gradtrace.api.jobs.new_job` (rate limit, code checks, device) and the kind's
       params, awaits :func:`gradtrace.api.jobs.run_unless_client_leaves` with
       ``svc.require_runner().run(job)`` (on :class:`~gradtrace.api.jobs.ClientGone` it
       answers ``Response(status_code=CLIENT_CLOSED)``) and answers the bytes as they are:
       ``json_response(request, raw=result.canonical, gz=None)`` (``api/responses.py``). Its
       ``response_model`` is the kind's pydantic model, so ``/openapi.json`` documents it; a
       ``timeout``/``crashed``/... answer is the ``failed`` shape above, so the model must
       admit it (or the kind brings its own ``failed``). A kind whose result must be stored
       stores ``result.canonical`` with its ``id``, never parses and re-serialises it.

    The queue needs nothing: the job travels in its wire form, the worker's pool runs and
    validates it, and the answer comes back framed: a header line (kind, id, status, schema
    version), the canonical bytes and the attachment (NOTE [read three fields] in
    ``sandbox/wire.py``). ``tests/sandbox/echo_kind.py`` is a kind that exists only in the tests,
    written by these rules and returning an attachment; ``tests/sandbox/test_job_kinds.py``
    runs it through the pool (result, attachment, time limit, crash, nonsense) and
    ``tests/scale/test_queue_kinds.py`` through the queue (result, attachment, lost worker):
    the pattern to copy for a real kind's tests. A runner is given such test-only kinds by
    their files (``kind_files``); the package's own kinds are ``BUILTIN``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from pydantic import BaseModel, ConfigDict

RUN: Final = "run"
"""Kind ``run``: record a snippet's autograd graph and answer its run document."""
GRADCHECK: Final = "gradcheck"
"""Kind ``gradcheck``: check a snippet's gradient numerically and answer the verdict."""


class Params(BaseModel):
    """A kind's typed params (NOTE [adding a job kind]): frozen, strict, nothing unknown.

    A kind subclasses it with its fields; a kind that reads nothing besides the code uses
    this class itself."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


@dataclass(frozen=True)
class Limits:
    """Per-job limits, copied from :class:`gradtrace.settings.Settings`."""

    timeout_s: float = 5.0
    cpu_s: int = 5
    memory_mb: int = 1024
    output_bytes: int = 64 * 1024
    result_bytes: int = 32 * 1024 * 1024
    max_nodes: int = 50_000
    max_events: int = 200_000
    tensor_bytes: int = 0
    """Budget of the run's tensor file (its buffers' bytes; 0: none kept), from
    ``Settings.tensor_budget_mb``."""

    @property
    def answer_bytes(self) -> int:
        """Cap on a child's whole answer: the document, and its tensor file beside it.

        NOTE [answer cap]
            The tensor file is its buffers (at most ``tensor_bytes``) behind a JSON header
            that names each kept tensor once. The document names each of them too, with its
            statistics, so the header is smaller than the document and ``result_bytes``
            bounds it as well.
        """
        return self.result_bytes + (self.tensor_bytes + self.result_bytes if self.tensor_bytes else 0)


@dataclass(frozen=True)
class Job:
    """One sandboxed job. ``device`` is already resolved to ``cpu`` or ``cuda``.

    ``kind`` is one of the kinds' names (:data:`RUN`, :data:`GRADCHECK`, ...); ``params`` is
    what that kind reads besides the code, as that kind's :class:`Params` model (a runner
    refuses a job whose params are another kind's). Between processes a job travels in one
    form only: :func:`gradtrace.sandbox.wire.encode_job`. NOTE [adding a job kind].
    """

    code: str
    device: str = "cpu"
    seed: int | None = 0
    limits: Limits = field(default_factory=Limits)
    kind: str = RUN
    params: Params = field(default_factory=Params)


@dataclass(frozen=True, slots=True)
class JobResult:
    """A runner's answer: the validated result's canonical JSON and the fields callers read.

    ``canonical`` is stored and served as it is; ``id``, ``status`` and ``schema_version`` are
    what the API needs to store and count it, known without parsing ``canonical`` again.
    ``document`` is the dict the runner validated, when it has one in this process (the local
    pool does; a result that came through the queue does not): tests and tools read it through
    :meth:`to_dict`, the API never does. ``attachment`` is the kind's binary answer beside
    the document (raw bytes, never inside the JSON), or None when it has none.
    """

    kind: str
    canonical: bytes
    id: str
    status: str
    schema_version: int
    document: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    attachment: bytes | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """Bytes of canonical JSON."""
        return len(self.canonical)

    def to_dict(self) -> dict[str, Any]:
        """The result as a dict: the one the runner validated, or ``canonical`` parsed."""
        if self.document is not None:
            return self.document
        parsed = orjson.loads(self.canonical)
        if not isinstance(parsed, dict):
            raise ValueError("a job result is a JSON object")
        return parsed


@dataclass
class RunnerState:
    """What ``/healthz`` and ``/readyz`` report about the runner."""

    kind: str
    ready: bool
    workers: int
    busy: int
    queued: int
    queue_capacity: int
    cuda_available: bool
    detail: dict[str, Any] = field(default_factory=dict)


class Runner(abc.ABC):
    """Executes jobs of every kind in isolation and answers with validated, typed results."""

    @abc.abstractmethod
    async def start(self) -> None:
        """Bring the workers up; called once when the service starts."""

    @abc.abstractmethod
    async def run(self, job: Job) -> JobResult:
        """Run one job and return its validated result (the supervisor's own when it failed).

        Raises :class:`gradtrace.errors.PoolSaturated` at once when the queue is full, and
        ValueError for a kind its table does not list (``BUILTIN`` in
        :mod:`gradtrace.sandbox.kinds`, plus its ``kind_files``) or params of another kind. If the
        awaiting task is cancelled (the client went away), the job is killed before this
        returns.
        """

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop every worker; no process may survive this."""

    @abc.abstractmethod
    def state(self) -> RunnerState:
        """A cheap snapshot of the pool for health checks and metrics."""

    @abc.abstractmethod
    def resolve_device(self, requested: str) -> str:
        """``cpu`` or ``cuda`` for a job that asked for ``auto``, ``cpu`` or ``cuda``; raises
        :class:`gradtrace.errors.DeviceUnavailable` for a device this runner cannot give."""
