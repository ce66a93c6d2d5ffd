"""The queue carries every job kind: ``run`` and the test-only ``echo`` kind, through redis-server
and a real ``gradtrace worker``, read by a :class:`QueueRunner` in this process.

The worker loads ``tests/sandbox/echo_kind.py`` into its zygote (``kind_files``); the runner in
this process is given the same file, as an API replica would list a kind. What comes back is a
typed :class:`~gradtrace.jobs.JobResult` whose fields are read from the worker's result frame
(NOTE [read three fields] in ``gradtrace/sandbox/wire.py``), not from the document, with the
kind's attachment as raw bytes beside it (NOTE [raw bytes through arq] in
``gradtrace/queue/keys.py``).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest

from gradtrace.jobs import RUN, Job, JobResult, Limits
from gradtrace.queue.runner import CRASHED, QueueRunner
from gradtrace.sandbox import kinds
from gradtrace.schema import RunDocument, document_id
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.settings import Settings
from scale.fleet import RedisServer, WorkerProc, launch_worker

ECHO_FILE = str(Path(__file__).resolve().parents[1] / "sandbox" / "echo_kind.py")
ECHO = kinds.load_kind_file(ECHO_FILE)
ENV = {"GRADTRACE_TIMEOUT_S": "8", "GRADTRACE_CPU_S": "8"}
LIMITS = Limits(timeout_s=8.0, cpu_s=8)
T = TypeVar("T")


@dataclass
class Queue:
    redis: RedisServer
    worker: WorkerProc
    runner: QueueRunner
    loop: asyncio.AbstractEventLoop

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))


@pytest.fixture(scope="module")
def queue() -> Iterator[Queue]:
    redis = RedisServer()
    worker = launch_worker({"GRADTRACE_REDIS_URL": redis.url, **ENV}, kind_files=[ECHO_FILE])
    loop = asyncio.new_event_loop()
    runner = QueueRunner(Settings(redis_url=redis.url, queue_size=4, queue_wait_s=30.0, timeout_s=8.0),
                         kind_files=[ECHO_FILE])
    q = Queue(redis, worker, runner, loop)
    try:
        q.call(runner.start())

        async def registered() -> None:
            while not (await runner.refresh()).of("cpu"):
                assert worker.proc.poll() is None, worker.log()[-3000:]
                await asyncio.sleep(0.2)

        q.call(registered(), timeout=120.0)
        yield q
    finally:
        try:
            q.call(runner.close())
        finally:
            loop.close()
            worker.stop()
            redis.close()


def _fields_are_its_bytes(result: JobResult) -> dict[str, Any]:
    assert result.document is None  # it came through Redis: nothing here parsed it
    doc: dict[str, Any] = orjson.loads(result.canonical)
    assert (result.id, result.status, result.schema_version, result.size) == (
        doc["id"], doc["status"], doc["schema_version"], len(result.canonical))
    assert canonical_with_id({**doc, "id": ""}) == (result.id, result.canonical)
    return doc


def test_a_run_job_comes_back_typed_with_its_canonical_document(queue: Queue) -> None:
    code = "x = torch.ones(3, requires_grad=True)\n(x * x).sum().backward()\nprint(x.grad)\n"
    result = queue.call(queue.runner.run(Job(code=code, seed=5, limits=LIMITS)))
    assert result.kind == RUN and result.status == "ok" and result.attachment is None
    doc = _fields_are_its_bytes(result)
    RunDocument.model_validate(doc)
    assert doc["code"] == code and doc["id"] == document_id(doc) and "tensor([2., 2., 2.])" in doc["stdout"]


def test_a_second_kind_goes_through_the_queue_with_its_params(queue: Queue) -> None:
    job = Job(kind="echo", code="answer = {'sum': sum(range(10))}\n", seed=9, params=ECHO.params(name="answer"),
              limits=LIMITS)
    result = queue.call(queue.runner.run(job))
    doc = _fields_are_its_bytes(result)
    assert result.kind == "echo" and result.status == "ok" and result.attachment is None
    assert doc["value"] == {"sum": 45} and doc["seed"] == 9 and doc["device"] == "cpu"


def test_an_attachment_comes_back_through_redis_as_the_childs_raw_bytes(queue: Queue) -> None:
    """Child pipe, worker, arq's result in Redis, this process: the same bytes, never base64."""
    code = "answer = 'blob'\nblob = bytes(range(256)) * 4096 + b'\\n{\"$bytes\": 0}\\n'\n"
    want = bytes(range(256)) * 4096 + b'\n{"$bytes": 0}\n'
    job = Job(kind="echo", code=code, seed=1, params=ECHO.params(name="answer", attach="blob"), limits=LIMITS)
    result = queue.call(queue.runner.run(job))
    assert (result.kind, result.status, _fields_are_its_bytes(result)["value"]) == ("echo", "ok", "blob")
    assert result.attachment == want


def test_an_unknown_kind_is_refused_before_it_is_enqueued(queue: Queue) -> None:
    with pytest.raises(ValueError, match="unknown job kind"):
        queue.call(queue.runner.run(Job(kind="nope", code="x = 1", limits=LIMITS)))


def test_a_second_kind_whose_worker_dies_gets_its_kinds_crashed_answer(queue: Queue) -> None:
    """Last: it kills the worker. The queue's own answer for a lost job is the kind's ``failed``."""
    job = Job(kind="echo", code="import time\ntime.sleep(30)\ny = 1\n", params=ECHO.params(name="y"), limits=LIMITS)

    async def kill_while_running() -> JobResult:
        task = asyncio.ensure_future(queue.runner.run(job))
        while not (await queue.runner.refresh()).busy("cpu"):
            await asyncio.sleep(0.05)
        os.killpg(queue.worker.proc.pid, signal.SIGKILL)
        return await task

    result = queue.call(kill_while_running())
    doc = result.to_dict()  # written here by the queue runner, not by the worker
    assert canonical_with_id({**doc, "id": ""}) == (result.id, result.canonical)
    assert (result.kind, result.status) == ("echo", "crashed")
    assert doc["kind"] == "echo" and doc["message"] == CRASHED
