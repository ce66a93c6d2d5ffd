"""The job seam carries kinds: ``run`` and a kind that exists only in the tests, through a real pool.

``echo_kind.py`` (next to this file) is a second kind written as NOTE [adding a job kind] in
``gradtrace/jobs.py`` says, loaded from its file by the test process and by the zygote; nothing
in the pool, the zygote or the child names it. ``tests/scale/test_queue_kinds.py`` takes the
same kind through the queue.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from gradtrace.jobs import RUN, Job, JobResult
from gradtrace.sandbox import kinds
from gradtrace.schema.canonical import canonical_with_id
from sandbox.pool_harness import PoolHarness, check_result

ECHO_FILE = str(Path(__file__).with_name("echo_kind.py"))


@pytest.fixture(scope="module")
def pool() -> Iterator[PoolHarness]:
    harness = PoolHarness(kind_files=[ECHO_FILE], workers=1, queue_size=2, timeout_s=3.0, cpu_s=1,
                          memory_mb=512, output_kb=16)
    try:
        yield harness
    finally:
        harness.close()


def _run(pool: PoolHarness, job: Job) -> JobResult:
    result = pool.call(pool.pool.run(job))
    pool.settle()
    return result


def _echo(pool: PoolHarness, code: str, name: str = "y", **limits: float) -> Job:
    return Job(kind="echo", code=code, seed=3, params={"name": name}, limits=pool.limits(**limits))


def _fields_are_its_bytes(result: JobResult) -> dict[str, object]:
    doc = orjson.loads(result.canonical)
    assert result.to_dict() == doc
    assert (result.id, result.status, result.schema_version, result.size) == (
        doc["id"], doc["status"], doc["schema_version"], len(result.canonical))
    assert canonical_with_id({**doc, "id": ""}) == (result.id, result.canonical)
    return doc


def test_both_kinds_are_registered_and_an_unknown_one_is_refused_before_a_slot_is_taken(pool: PoolHarness) -> None:
    assert {"echo", RUN} <= set(kinds.kinds())
    with pytest.raises(ValueError, match="unknown job kind 'nope'"):
        pool.call(pool.pool.run(Job(kind="nope", code="x = 1", limits=pool.limits())))
    assert pool.pool.state().busy == 0


def test_the_run_kind_answers_a_typed_result_of_its_document(pool: PoolHarness) -> None:
    code = "x = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\nprint(x.grad)\n"
    result = _run(pool, Job(code=code, seed=1, limits=pool.limits()))
    doc = check_result(result, code)
    assert result.status == "ok" and "tensor([3., 3.])" in doc["stdout"]


def test_a_second_kind_runs_in_the_sandbox_with_its_params(pool: PoolHarness) -> None:
    result = _run(pool, _echo(pool, "y = [sum(range(4)), 6 * 7]\n"))
    doc = _fields_are_its_bytes(result)
    assert result.kind == "echo" and result.status == "ok"
    assert doc["name"] == "y" and doc["value"][1] == 42
    assert doc["device"] == "cpu" and doc["seed"] == 3  # set by the web side from the job
    other = _run(pool, _echo(pool, "z = 'other name'\n", name="z"))
    assert _fields_are_its_bytes(other)["value"] == "other name" and other.id != result.id


def test_a_second_kind_that_runs_out_of_time_gets_the_supervisors_answer(pool: PoolHarness) -> None:
    result = _run(pool, _echo(pool, "print('looping')\nwhile True:\n    pass\n", timeout_s=30.0))
    doc = _fields_are_its_bytes(result)
    assert result.kind == "echo" and result.status == "timeout"
    assert doc["message"] == "Stopped: the snippet used more than 1 s of CPU time."
    assert doc["stdout"] == "looping\n" and doc["kind"] == "echo" and doc["seed"] == 3


def test_a_second_kind_that_dies_or_answers_nonsense_is_crashed(pool: PoolHarness) -> None:
    died = _run(pool, _echo(pool, "import os\nos._exit(3)\n"))
    assert (died.kind, died.status) == ("echo", "crashed")
    assert "exited with code 3" in str(died.to_dict()["message"])
    wrong = _run(pool, _echo(pool, "y = 1\nimport os\nos.write(3, b'{\"kind\": \"echo\"}')\nos._exit(0)\n"))
    assert (wrong.kind, wrong.status) == ("echo", "crashed")
    assert wrong.to_dict()["message"] == "The snippet's process returned an invalid result."
    unjsonable = _run(pool, _echo(pool, "y = object()\n"))
    assert (unjsonable.kind, unjsonable.status) == ("echo", "crashed")  # the handler raised


def test_the_kind_runs_after_the_pool_answered_other_kinds(pool: PoolHarness) -> None:
    """Kinds share one pool: a run after echo jobs is an ordinary run (no state leaks across)."""
    code = "print('after')\n"
    assert check_result(_run(pool, Job(code=code, limits=pool.limits())), code)["stdout"] == "after\n"
