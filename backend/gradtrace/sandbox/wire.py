"""The one form a job and its answer take between processes: the pool's pipes, the queue.

A :class:`~gradtrace.jobs.Job` is encoded once, by :func:`encode_job`, and read back once, by
:func:`decode_job`: the pool writes it to the child's job pipe, the queue carries the same
bytes to a worker. Answers go the other way in frames (:func:`pack`): the child's
:class:`Answer` (document, attachment) on the result pipe, a worker's :class:`JobResult`
(header line, canonical bytes, attachment) through Redis.

NOTE [answer frames]
    A kind answers JSON and, beside it, an optional binary attachment (a tensor file). Binary
    never goes inside JSON (base64 costs a third more bytes and a copy each way), so a frame
    is ``MAGIC``, the part count, each part's length (-1: the part is absent), then the parts'
    raw bytes back to back. Decoding is strict: the wrong magic or count, a length that does
    not add up to exactly the bytes given, is a ValueError, and the caller answers that the
    job returned an invalid result. A snippet can write to the result pipe itself; that only
    spoils its own answer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass

import orjson
from pydantic import ValidationError

from gradtrace.jobs import Job, JobResult, Limits, Params

MAGIC = b"GTF1"
_COUNT = struct.Struct("<4sI")
_LENGTH = struct.Struct("<q")
ABSENT = -1
"""A part's length when the part is None (an answer without attachment)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a kind's handler returns in the child: its result's JSON and an optional attachment."""

    document: bytes
    attachment: bytes | None = None

    @property
    def size(self) -> int:
        return len(self.document) + len(self.attachment or b"")


def pack(*parts: bytes | None) -> bytes:
    """The frame of ``parts`` (NOTE [answer frames])."""
    head = [_COUNT.pack(MAGIC, len(parts))]
    head += [_LENGTH.pack(ABSENT if part is None else len(part)) for part in parts]
    return b"".join([*head, *(part for part in parts if part)])


def unpack(raw: bytes, count: int) -> tuple[bytes | None, ...]:
    """The ``count`` parts of a frame; ValueError for anything that is not exactly one."""
    if len(raw) < _COUNT.size + count * _LENGTH.size:
        raise ValueError("not an answer frame: too short")
    magic, got = _COUNT.unpack_from(raw)
    if magic != MAGIC or got != count:
        raise ValueError(f"not an answer frame of {count} parts")
    view = memoryview(raw)
    at = _COUNT.size + count * _LENGTH.size
    parts: list[bytes | None] = []
    for i in range(count):
        (length,) = _LENGTH.unpack_from(raw, _COUNT.size + i * _LENGTH.size)
        if length == ABSENT:
            parts.append(None)
            continue
        if length < 0 or at + length > len(raw):
            raise ValueError("answer frame: a part runs past the end")
        parts.append(bytes(view[at:at + length]))
        at += length
    if at != len(raw):
        raise ValueError("answer frame: bytes after the last part")
    return tuple(parts)


def encode_answer(answer: Answer) -> bytes:
    return pack(answer.document, answer.attachment)


def decode_answer(raw: bytes) -> Answer:
    document, attachment = unpack(raw, 2)
    if document is None:
        raise ValueError("answer frame without a document")
    return Answer(document, attachment)


def encode_job(job: Job) -> bytes:
    """The job as the child and the queue read it (:func:`decode_job`)."""
    return orjson.dumps({"kind": job.kind, "code": job.code, "device": job.device, "seed": job.seed,
                         "params": job.params.model_dump(mode="json"), "limits": asdict(job.limits)})


def decode_job(raw: bytes, params_of: Callable[[str], type[Params]]) -> Job:
    """The job :func:`encode_job` wrote, its params validated by their kind's model
    (``params_of(kind)``, which raises ValueError for a kind it does not know); ValueError
    for anything else."""
    try:
        data = orjson.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("a job is a JSON object")
        kind, code, device, seed = data["kind"], data["code"], data["device"], data["seed"]
        if not (isinstance(kind, str) and isinstance(code, str) and isinstance(device, str)
                and (seed is None or (isinstance(seed, int) and not isinstance(seed, bool)))):
            raise ValueError("a job's kind, code, device or seed has the wrong type")
        params = params_of(kind).model_validate(data["params"])
        limits = Limits(**data["limits"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise ValueError(f"not a job: {exc}") from None
    return Job(kind=kind, code=code, device=device, seed=seed, params=params, limits=limits)


def encode_result(result: JobResult) -> bytes:
    """A worker's answer through the queue: the fields the API reads, the canonical bytes and
    the attachment, as one frame.

    NOTE [read three fields]
        The API side stores and counts a result by its id, status and schema version. They
        travel as a small JSON header in front of the canonical bytes, so the API reads them
        from ~100 bytes instead of parsing a document of up to ``result_bytes`` (a GRU
        unrolled 200 steps is 4 MB; ``bench/bench_queue.py`` measures both).
    """
    head = orjson.dumps({"kind": result.kind, "id": result.id, "status": result.status,
                         "schema_version": result.schema_version})
    return pack(head, result.canonical, result.attachment)


def decode_result(raw: bytes) -> JobResult:
    """The typed result :func:`encode_result` wrote; ValueError for anything else."""
    head, canonical, attachment = unpack(raw, 3)
    if head is None or canonical is None:
        raise ValueError("a result frame without its header or document")
    fields = orjson.loads(head)
    if not isinstance(fields, dict):
        raise ValueError("a result's header is a JSON object")
    try:
        return JobResult(kind=str(fields["kind"]), canonical=canonical, id=str(fields["id"]),
                         status=str(fields["status"]), schema_version=int(fields["schema_version"]),
                         attachment=attachment)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a result's header lacks a field: {exc}") from None
