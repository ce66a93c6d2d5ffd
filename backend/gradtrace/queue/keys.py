"""Names in Redis, arq's serializer, and the worker registry shared by API replicas and workers.

A job travels as its wire form and a worker answers a result frame (both
:mod:`gradtrace.sandbox.wire`); :func:`serialize` carries their bytes raw.

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

import struct
from typing import Any

import orjson
from redis.asyncio import Redis

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


BLOB = "$bytes"
"""The key of the placeholder that stands for a ``bytes`` value inside arq's JSON (NOTE [raw
bytes through arq])."""
_BLOBS = b"GTB1"
_LENGTH = struct.Struct("<Q")


def serialize(obj: Any) -> bytes:
    """arq's serializer: JSON, never pickle (an exception in a failed result becomes its repr).

    NOTE [raw bytes through arq]
        A job (its wire form) and a worker's answer (a frame with the document and its binary
        attachment) are ``bytes``. JSON cannot hold bytes, and base64 would cost a third more
        of a result of up to ``result_bytes``; so each ``bytes`` value becomes
        ``{"$bytes": i}`` in arq's JSON and its raw bytes follow the JSON: ``GTB1``, the JSON's
        length, the JSON, then each value's length and bytes. Without a ``bytes`` value the
        JSON is written alone, as before. Everything a user sent is inside those bytes, so no
        JSON object of theirs can be taken for a placeholder.
    """
    blobs: list[bytes] = []

    def default(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            blobs.append(bytes(value))
            return {BLOB: len(blobs) - 1}
        return repr(value)

    text = orjson.dumps(obj, default=default)
    if not blobs:
        return text
    parts = [_BLOBS, _LENGTH.pack(len(text)), text]
    for blob in blobs:
        parts += [_LENGTH.pack(len(blob)), blob]
    return b"".join(parts)


def deserialize(raw: bytes) -> Any:
    if not raw.startswith(_BLOBS):
        return orjson.loads(raw)
    view = memoryview(raw)
    at = len(_BLOBS)
    (size,) = _LENGTH.unpack_from(raw, at)
    at += _LENGTH.size
    obj = orjson.loads(view[at:at + size])
    at += size
    blobs: list[bytes] = []
    while at < len(raw):
        (size,) = _LENGTH.unpack_from(raw, at)
        at += _LENGTH.size
        if at + size > len(raw):
            raise ValueError("arq payload: a value runs past the end")
        blobs.append(bytes(view[at:at + size]))
        at += size
    return _put_back(obj, blobs)


def _put_back(obj: Any, blobs: list[bytes]) -> Any:
    if isinstance(obj, dict):
        if len(obj) == 1 and isinstance(obj.get(BLOB), int):
            return blobs[obj[BLOB]]
        return {k: _put_back(v, blobs) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_put_back(v, blobs) for v in obj]
    return obj
