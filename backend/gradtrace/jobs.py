"""The job seam: what the web process asks a runner to do, and the typed answer it gets back.

The API only ever calls :meth:`Runner.run` with a :class:`Job` and reads a :class:`JobResult`.
Two runners carry every kind of job: the local fork-server pool
(:class:`gradtrace.sandbox.pool.ForkServerPool`) and the queue of worker machines
(:class:`gradtrace.queue.runner.QueueRunner`); :mod:`gradtrace.runners`, above both, picks one
by ``GRADTRACE_RUNNER``. What each kind *does* lives in one module of
:mod:`gradtrace.sandbox.kinds`. The in-process runner used by capture's unit tests lives in
``tests/`` helpers, never here: the service never runs user code in the web process.

NOTE [adding a job kind]
    A kind is a name (``run``, ``gradcheck``) and one module, ``gradtrace/sandbox/kinds/<name>.py``,
    plus one route. Nothing in the pool, the queue, the zygote or the child changes.

    1. The module ends with ``register(JobKind(name, handle=..., validate=..., failed=...))``
       (:mod:`gradtrace.sandbox.kinds.registry`). Importing ``gradtrace.sandbox.kinds`` imports
       every module of the package, so the file's existence is its registration: the zygote
       imports the package before it forks (so children never import anything after
       lock-down, when they could not read the source tree), and the pool and the queue
       runner import it in the web process and the worker. Keep the module's top level free
       of torch (``tests/test_torch_free.py`` imports it in the web process); import torch and
       capture inside ``handle``, where the zygote has already loaded them.
    2. ``handle(job: ChildJob) -> bytes`` runs in the locked-down child. It receives the job's
       ``code``, ``device`` (``cpu``/``cuda``, resolved), ``seed``, ``params`` (the JSON-able
       mapping the route put in :attr:`Job.params`, as parsed JSON) and the capture limits
       (``max_nodes``, ``max_events``, ``output_bytes``). User code must be compiled with the
       file name ``job.filename`` (``<snippet>``): the time-limit handler only raises
       ``TimeLimitExceeded`` while a frame of that file is on the stack (NOTE [stop, then kill]
       in ``sandbox/child.py``). It returns the result as JSON bytes (canonical JSON with
       ``"id": ""`` is best: the web side hashes it anyway); the child writes them to the
       result pipe, closes it and exits. Whatever the user's code prints is its ``stdout``
       pipe, capped by the supervisor. If ``TimeLimitExceeded`` escapes ``handle`` the child
       exits with ``EXIT_CPU_LIMIT`` or ``EXIT_WALL_LIMIT`` (the supervisor answers
       ``timeout``); any other exception exits ``EXIT_INTERNAL`` (``crashed``).
    3. ``validate(job: Job, raw: bytes) -> JobResult | None`` runs on the web side (in the web
       process for the pool, in the worker for the queue) and trusts nothing: ``raw`` is at
       most ``Limits.result_bytes``; parse it as JSON, validate it against the kind's pydantic
       model (in ``gradtrace.schema``), overwrite what the job decides (``code``, ``seed``,
       ``device``), give it its id with :func:`gradtrace.schema.canonical.canonical_with_id`
       and return ``JobResult(kind, canonical, id, status, schema_version)``. Return ``None``
       for bytes that are not a valid result: the supervisor then answers ``crashed``.
    4. ``failed(job, status, message, stdout) -> JobResult`` is the supervisor's own answer
       when the child left no valid result: ``status`` is ``timeout`` (wall clock, CPU, or
       ``TimeLimitExceeded`` escaped), ``output_limit`` (output flood or result over
       ``result_bytes``), ``memory_limit`` or ``crashed`` (killed, exited, invalid result, or
       on the queue: its worker went away or was drained), ``message`` is a sentence for the
       user and ``stdout`` the capped output. The default,
       :func:`gradtrace.sandbox.kinds.registry.failure_result`, answers the canonical JSON of
       ``{"id", "kind", "schema_version": 1, "status", "message", "stdout", "device", "seed"}``.
    5. The route (``gradtrace/api/<name>.py``, included in ``api/app.py``) validates its
       request body with a strict pydantic model, builds ``Job(kind=name, code=..., params=
       {...})`` with :func:`gradtrace.api.jobs.new_job` (rate limit, code checks, device),
       awaits :func:`gradtrace.api.jobs.run_unless_client_leaves` with
       ``svc.require_runner().run(job)`` (on :class:`~gradtrace.api.jobs.ClientGone` it
       answers ``Response(status_code=CLIENT_CLOSED)``) and answers the bytes as they are:
       ``json_response(request, raw=result.canonical, gz=None)`` (``api/responses.py``). Its
       ``response_model`` is the kind's pydantic model, so ``/openapi.json`` documents it; a
       ``timeout``/``crashed``/... answer is the ``failed`` shape above, so the model must
       admit it (or the kind brings its own ``failed``). A kind whose result must be stored
       stores ``result.canonical`` with its ``id``, never parses and re-serialises it.

    The queue needs nothing: a job's ``kind`` and ``params`` travel in its payload, the worker's
    pool runs and validates it, and the answer comes back as a header line (kind, id, status,
    schema version) and the canonical bytes (NOTE [read three fields] in ``queue/keys.py``).
    ``tests/sandbox/echo_kind.py`` is a kind that exists only in the tests, written by these
    rules; ``tests/sandbox/test_job_kinds.py`` runs it through the pool (result, time limit,
    crash, nonsense) and ``tests/scale/test_queue_kinds.py`` through the queue (result, lost
    worker): the pattern to copy for a real kind's tests.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

RUN = "run"
"""The kind of every job before kinds existed: record a snippet's autograd graph."""


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


@dataclass(frozen=True)
class Job:
    """One sandboxed job. ``device`` is already resolved to ``cpu`` or ``cuda``.

    ``kind`` names its module in :mod:`gradtrace.sandbox.kinds`; ``params`` is what that kind
    reads besides the code, as JSON-able values (it travels as JSON to the child and through
    the queue). NOTE [adding a job kind].
    """

    code: str
    device: str = "cpu"
    seed: int | None = 0
    limits: Limits = field(default_factory=Limits)
    kind: str = RUN
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobResult:
    """A runner's answer: the validated result's canonical JSON and the fields callers read.

    ``canonical`` is stored and served as it is; ``id``, ``status`` and ``schema_version`` are
    what the API needs to store and count it, known without parsing ``canonical`` again.
    ``document`` is the dict the runner validated, when it has one in this process (the local
    pool does; a result that came through the queue does not): tests and tools read it through
    :meth:`to_dict`, the API never does.
    """

    kind: str
    canonical: bytes
    id: str
    status: str
    schema_version: int
    document: dict[str, Any] | None = field(default=None, compare=False, repr=False)

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
        ValueError for a kind no module of :mod:`gradtrace.sandbox.kinds` registers. If the
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
