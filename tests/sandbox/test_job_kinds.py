"""The job seam carries kinds: ``run`` and a kind that exists only in the tests, through a real pool.

``echo_kind.py`` (next to this file) is a second kind written as NOTE [adding a job kind] in
``gradtrace/jobs.py`` says, given to the pool (and its zygote) by its file; nothing in
the pool, the zygote or the child names it. Its answer can carry an attachment, which comes
back as raw bytes beside the document. ``tests/scale/test_queue_kinds.py`` takes the same kind
through the queue.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from safetensors.numpy import load

from gradtrace.jobs import GRADCHECK, RUN, Job, JobResult, Params
from gradtrace.sandbox import kinds
from gradtrace.sandbox.kinds import run as run_kind
from gradtrace.sandbox.kinds.gradcheck import GradcheckParams
from gradtrace.sandbox.wire import Answer
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.gradcheck import TargetSpec
from gradtrace.storage.tensor_rows import tensor_sha256
from sandbox.pool_harness import PoolHarness, check_result

ECHO_FILE = str(Path(__file__).with_name("echo_kind.py"))
ECHO = kinds.load_kind_file(ECHO_FILE)
BLOB = bytes(range(256)) * 4096 + b"\n{}\n"
"""1 MiB and a few bytes, every byte value (newlines and braces too), more than a pipe holds."""


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


def _echo(pool: PoolHarness, code: str, name: str = "y", attach: str | None = None, **limits: float) -> Job:
    return Job(kind=ECHO.name, code=code, seed=3, params=ECHO.params(name=name, attach=attach),
               limits=pool.limits(**limits))


def _fields_are_its_bytes(result: JobResult) -> dict[str, object]:
    doc = orjson.loads(result.canonical)
    assert result.to_dict() == doc
    assert (result.id, result.status, result.schema_version, result.size) == (
        doc["id"], doc["status"], doc["schema_version"], len(result.canonical))
    assert canonical_with_id({**doc, "id": ""}) == (result.id, result.canonical)
    return doc


def test_the_kinds_are_listed_once_and_an_unknown_one_is_refused_before_a_slot_is_taken(pool: PoolHarness) -> None:
    assert [k.name for k in kinds.BUILTIN] == [RUN, GRADCHECK]
    assert kinds.table().names() == (GRADCHECK, RUN)  # a file loaded elsewhere adds nothing here
    assert pool.pool.kinds.names() == ("echo", GRADCHECK, RUN)
    with pytest.raises(ValueError, match="unknown job kind 'nope'"):
        pool.call(pool.pool.run(Job(kind="nope", code="x = 1", limits=pool.limits())))
    assert pool.pool.state().busy == 0


def test_params_of_another_kind_are_refused_before_a_slot_is_taken(pool: PoolHarness) -> None:
    check = GradcheckParams(target=TargetSpec(kind="parameters"))
    for kind, params in ((RUN, check), (GRADCHECK, Params()), (ECHO.name, Params())):
        with pytest.raises(ValueError, match=f"a {kind!r} job takes"):
            pool.call(pool.pool.run(Job(kind=kind, code="x = 1", params=params, limits=pool.limits())))
    assert pool.pool.state().busy == 0


def test_the_run_kind_answers_a_typed_result_of_its_document(pool: PoolHarness) -> None:
    code = "x = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\nprint(x.grad)\n"
    result = _run(pool, Job(code=code, seed=1, limits=pool.limits()))
    doc = check_result(result, code)
    assert result.status == "ok" and "tensor([3., 3.])" in doc["stdout"]


def test_the_run_kind_answers_its_tensor_file_and_accepts_only_the_file_its_document_names(
        pool: PoolHarness) -> None:
    """The run kind's attachment is the tensor file; the web side checks it as it checks the
    document (NOTE [adding a job kind], step 3): a file whose hash or length is not the one the
    document names, a damaged header, or a file missing or unnamed, is no valid answer."""
    code = "w = torch.ones(3, requires_grad=True)\n(w * torch.arange(3.0)).sum().backward()\n"
    job = Job(code=code, seed=1, limits=pool.limits(tensor_bytes=1 << 20))
    result = _run(pool, job)
    doc = check_result(result, code)
    assert result.attachment is not None and doc["tensors"]["bytes"] == len(result.attachment)
    (leaf,) = (n for n in doc["graph"]["nodes"] if n.get("name") == "w")
    assert load(result.attachment)[leaf["grad_history"][0]["key"]].tolist() == [0.0, 1.0, 2.0]
    again = run_kind.validate(job, Answer(result.canonical, result.attachment))
    assert again is not None and again.id == result.id and again.attachment == result.attachment
    flipped = result.attachment[:-1] + bytes([result.attachment[-1] ^ 1])
    n = int.from_bytes(result.attachment[:8], "little")
    bad_header = result.attachment[:8] + b"[" + result.attachment[9:]
    named_bad = orjson.loads(result.canonical)
    named_bad["tensors"] = {**named_bad["tensors"], "sha256": tensor_sha256(bad_header)}
    assert n > 2
    for attachment, canonical in ((flipped, result.canonical), (None, result.canonical),
                                  (result.attachment[:-4], result.canonical),
                                  (bad_header, orjson.dumps(named_bad))):
        assert run_kind.validate(job, Answer(canonical, attachment)) is None
    bare = _run(pool, Job(code=code, seed=1, limits=pool.limits()))  # no budget: no file
    assert bare.attachment is None and "tensors" not in check_result(bare, code)
    assert run_kind.validate(job, Answer(bare.canonical, result.attachment)) is None


def test_a_second_kind_runs_in_the_sandbox_with_its_params(pool: PoolHarness) -> None:
    result = _run(pool, _echo(pool, "y = [sum(range(4)), 6 * 7]\n"))
    doc = _fields_are_its_bytes(result)
    assert result.kind == "echo" and result.status == "ok" and result.attachment is None
    assert doc["name"] == "y" and doc["value"][1] == 42
    assert doc["device"] == "cpu" and doc["seed"] == 3  # set by the web side from the job
    other = _run(pool, _echo(pool, "z = 'other name'\n", name="z"))
    assert _fields_are_its_bytes(other)["value"] == "other name" and other.id != result.id


def test_an_attachment_comes_back_as_the_childs_raw_bytes_beside_the_document(pool: PoolHarness) -> None:
    """The child frames its JSON and its attachment on the result pipe; both come back exact."""
    code = "y = 'with a blob'\nblob = bytes(range(256)) * 4096 + b'\\n{}\\n'\n"
    result = _run(pool, _echo(pool, code, attach="blob"))
    doc = _fields_are_its_bytes(result)
    assert (result.kind, result.status, doc["value"]) == ("echo", "ok", "with a blob")
    assert result.attachment == BLOB and len(BLOB) > 1 << 20
    empty = _run(pool, _echo(pool, "y = 1\nblob = b''\n", attach="blob"))
    assert (empty.status, empty.attachment) == ("ok", b"")  # empty, not absent


def test_an_answer_over_the_result_limit_with_its_attachment_is_an_output_limit(pool: PoolHarness) -> None:
    """``result_bytes`` caps the whole answer, the attachment included."""
    code = "y = 1\nblob = bytes(3 << 20)\n"
    result = _run(pool, _echo(pool, code, attach="blob", result_bytes=2 << 20))
    assert (result.kind, result.status, result.attachment) == ("echo", "output_limit", None)
    assert "result was larger than 2 MiB" in str(result.to_dict()["message"])


def test_a_second_kind_that_runs_out_of_time_gets_the_supervisors_answer(pool: PoolHarness) -> None:
    result = _run(pool, _echo(pool, "print('looping')\nwhile True:\n    pass\n", timeout_s=30.0))
    doc = _fields_are_its_bytes(result)
    assert result.kind == "echo" and result.status == "timeout"
    assert doc["message"] == "Stopped: the snippet used more than 1 s of CPU time."
    assert doc["stdout"] == "looping\n" and doc["kind"] == "echo" and doc["seed"] == 3


def test_a_second_kind_stopped_at_its_wall_clock_limit_says_so(pool: PoolHarness) -> None:
    result = _run(pool, _echo(pool, "import time\nprint('waiting')\ntime.sleep(30)\n", timeout_s=1.0))
    doc = _fields_are_its_bytes(result)
    assert (result.kind, result.status) == ("echo", "timeout")
    assert doc["message"] == "Stopped: the snippet ran longer than 1 s." and doc["stdout"] == "waiting\n"


def test_a_second_kind_that_dies_or_answers_nonsense_is_crashed(pool: PoolHarness) -> None:
    died = _run(pool, _echo(pool, "import os\nos._exit(3)\n"))
    assert (died.kind, died.status) == ("echo", "crashed")
    assert "exited with code 3" in str(died.to_dict()["message"])
    wrong = _run(pool, _echo(pool, "y = 1\nimport os\nos.write(3, b'{\"kind\": \"echo\"}')\nos._exit(0)\n"))
    assert (wrong.kind, wrong.status) == ("echo", "crashed")
    assert wrong.to_dict()["message"] == "The snippet's process returned an invalid result."
    # A frame the snippet wrote itself, well formed but with an attachment nobody asked for.
    forged = ("import os, json\nfrom gradtrace.sandbox.wire import Answer, encode_answer\ny = 1\n"
              "doc = json.dumps({'id': '', 'kind': 'echo', 'schema_version': 1, 'status': 'ok', 'name': 'y', "
              "'value': 1}).encode()\nos.write(3, encode_answer(Answer(doc, b'x')))\nos._exit(0)\n")
    spoiled = _run(pool, _echo(pool, forged))
    assert (spoiled.status, spoiled.attachment) == ("crashed", None)
    unjsonable = _run(pool, _echo(pool, "y = object()\n"))
    assert (unjsonable.kind, unjsonable.status) == ("echo", "crashed")  # the handler raised


def test_the_kind_runs_after_the_pool_answered_other_kinds(pool: PoolHarness) -> None:
    """Kinds share one pool: a run after echo jobs is an ordinary run (no state leaks across)."""
    code = "print('after')\n"
    assert check_result(_run(pool, Job(code=code, limits=pool.limits())), code)["stdout"] == "after\n"


def test_each_exit_code_is_written_once_and_means_one_thing() -> None:
    """The child, the zygote and the supervisor read their exit codes from ``protocol.py`` alone."""
    import ast

    from gradtrace.sandbox import protocol

    codes = {name: value for name, value in vars(protocol).items() if name.startswith("EXIT_")}
    assert len(set(codes.values())) == len(codes) >= 9
    sandbox = Path(protocol.__file__).parent
    for path in sandbox.rglob("*.py"):
        assigned = [t.id for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Assign)
                    for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("EXIT_")]
        assert path.name == "protocol.py" or not assigned, f"{path.name} defines {assigned}"
