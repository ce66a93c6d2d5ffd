"""Names in Redis, the job payload, and the worker registry shared by API replicas and workers.

NOTE [why arq]
    arq is asyncio from end to end: the API enqueues and reads results on uvicorn's loop, and
    the worker runs jobs as tasks on the loop that already drives the fork-server pool, so a
    worker's concurrency is just ``max_jobs`` (no threads, no prefork of its own). It has what
    the queue needs built in: ``_expires`` drops a job that waited past its deadline before
    it ever starts, ``Job.abort`` cancels the job's task on the worker (the pool then kills the
    jailed child), ``max_tries=1`` guarantees a job whose worker died is never run again, and
    results live in Redis for any replica to read. Celery and Dramatiq are thread/process based
    and need extra packages for asyncio and for aborting a running task; RQ forks per job;
    taskiq cannot abort a running task.

NOTE [worker registry]
    arq knows queues, not workers. Each worker writes ``gradtrace:worker:<device>:<id>`` (its
    slots, busy count, isolation layers) with a 3 s TTL and refreshes it every second; a key
    that expired is a worker that is gone. While a job runs, ``gradtrace:running:<job id>``
    names its worker, which is how an API replica tells "still running" from "its worker was
    SIGKILLed" within a few seconds. The wake-up lists (``gradtrace:wake:<device>``, and
    ``gradtrace:done:<job id>``) only shorten waits: arq's own state stays the truth, and a
    lost nudge costs at most one poll interval.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson
from redis.asyncio import Redis

from gradtrace.jobs import Job, JobResult, Limits

DEVICES = ("cpu", "cuda")
FUNCTION = "run_job"
"""The arq function every worker registers: it runs a job of any kind (``Job.kind``)."""
HEARTBEAT_S = 1.0
WORKER_TTL_S = 3.0
POLL_S = 0.25
"""Longest a waiting API request or an idle worker sleeps between looks at arq's state."""


def queue_name(device: str) -> str:
    return f"gradtrace:queue:{device}"


def wake_key(device: str) -> str:
    return f"gradtrace:wake:{device}"


def done_key(job_id: str) -> str:
    return f"gradtrace:done:{job_id}"


def running_key(job_id: str) -> str:
    return f"gradtrace:running:{job_id}"


def worker_key(device: str, worker_id: str) -> str:
    return f"gradtrace:worker:{device}:{worker_id}"


WORKER_PATTERN = "gradtrace:worker:*"


async def wait_for_push(redis: Redis, key: str, timeout_s: float) -> bool:
    """BLPOP with a fractional timeout (redis-py's type hints only admit whole seconds)."""
    got = await redis.execute_command("BLPOP", key, timeout_s)  # type: ignore[no-untyped-call]
    return got is not None


def serialize(obj: Any) -> bytes:
    """arq's serializer: JSON, never pickle (an exception in a failed result becomes its repr)."""
    return orjson.dumps(obj, default=repr)


def deserialize(raw: bytes) -> Any:
    return orjson.loads(raw)


def job_payload(job: Job) -> dict[str, Any]:
    return {"kind": job.kind, "code": job.code, "device": job.device, "seed": job.seed,
            "params": dict(job.params), "limits": asdict(job.limits)}


def job_from_payload(payload: dict[str, Any]) -> Job:
    return Job(kind=str(payload.get("kind", "run")), code=str(payload["code"]), device=str(payload["device"]),
               seed=payload.get("seed"), params=dict(payload.get("params") or {}),
               limits=Limits(**payload["limits"]))


def result_message(result: JobResult) -> str:
    """What a worker answers through arq: one line of the fields the API reads, then the result.

    NOTE [read three fields]
        The API side stores and counts a result by its id, status and schema version. They
        travel as a small JSON header line in front of the canonical bytes, so the API reads
        them from ~100 bytes instead of parsing a document of up to ``result_bytes`` (a GRU
        unrolled 200 steps is 4 MB; ``bench/bench_queue.py`` measures both). Canonical JSON
        never holds a raw newline (JSON escapes them inside strings), so the first newline
        ends the header.
    """
    head = orjson.dumps({"kind": result.kind, "id": result.id, "status": result.status,
                         "schema_version": result.schema_version})
    return (head + b"\n" + result.canonical).decode()


def result_from_message(message: str) -> JobResult:
    """The typed result from :func:`result_message`'s text; ValueError for anything else."""
    head, sep, body = message.partition("\n")
    fields = orjson.loads(head)
    if not sep or not isinstance(fields, dict):
        raise ValueError("not a worker's result message")
    return JobResult(kind=str(fields["kind"]), canonical=body.encode(), id=str(fields["id"]),
                     status=str(fields["status"]), schema_version=int(fields["schema_version"]))
