"""The one wire form of a job and the frames of its answer (``gradtrace/sandbox/wire.py``), and the
bytes arq carries for them (NOTE [raw bytes through arq] in ``gradtrace/queue/keys.py``).

The same frames go through a real child and a real Redis in ``test_job_kinds.py`` and
``tests/scale/test_queue_kinds.py``; here each codec is held to its contract on its own:
what goes in comes out, and anything that is not exactly a frame is refused.
"""

from __future__ import annotations

import pytest

from gradtrace.jobs import GRADCHECK, RUN, Job, JobResult, Limits, Params
from gradtrace.queue import keys
from gradtrace.sandbox import kinds
from gradtrace.sandbox.kinds.gradcheck import GradcheckParams
from gradtrace.sandbox.wire import Answer, decode_answer, decode_result, encode_answer, encode_job, encode_result, pack
from gradtrace.schema.gradcheck import TargetSpec

BLOB = bytes(range(256)) * 64 + b'{"$bytes": 0}\n'
TABLE = kinds.table()


def test_a_job_of_each_kind_comes_back_equal_from_its_one_wire_form() -> None:
    check = GradcheckParams(target=TargetSpec(kind="function", name="Cube", occurrence=2, pass_index=1),
                            max_elements=9, sample_seed=4, time_budget_s=1.5, mode="forward")
    for job in (Job(code="x = 1\n", seed=None, limits=Limits(timeout_s=2.5, cpu_s=2)),
                Job(kind=GRADCHECK, code="y = 'ü'\n", device="cuda", seed=2**40, params=check)):
        back = TABLE.decode(encode_job(job))
        assert back == job and type(back.params) is type(job.params)


@pytest.mark.parametrize("change", [
    {"kind": "nope"}, {"params": {"target": {"kind": "leaf"}, "extra": 1}}, {"seed": True}, {"code": 3},
    {"params": {"target": {"kind": "leaf"}, "max_elements": "9"}}, {"limits": {"nope": 1}}])
def test_a_wire_form_that_is_not_a_valid_job_is_refused(change: dict[str, object]) -> None:
    import orjson

    good = orjson.loads(encode_job(Job(kind=GRADCHECK, code="x = 1", params=GradcheckParams(
        target=TargetSpec(kind="leaf", name="x")))))
    with pytest.raises(ValueError):
        TABLE.decode(orjson.dumps({**good, **change}))
    with pytest.raises(ValueError):
        TABLE.decode(b"[1, 2]")


def test_an_answer_frame_keeps_its_parts_exactly_and_tells_absent_from_empty() -> None:
    for answer in (Answer(b'{"a": 1}'), Answer(b"{}", b""), Answer(b"\n", BLOB)):
        assert decode_answer(encode_answer(answer)) == answer
    assert encode_answer(Answer(b"{}")) != encode_answer(Answer(b"{}", b""))


@pytest.mark.parametrize("raw", [
    b"", b"{}", b'{"id": ""}', pack(b"{}"), pack(b"{}", None, None), pack(None, b"x"),
    pack(b"{}", BLOB)[:-1], pack(b"{}", BLOB) + b"!", b"GTF0" + pack(b"{}", None)[4:],
    pack(b"{}", None)[:-8] + (2**40).to_bytes(8, "little")])
def test_anything_that_is_not_exactly_an_answer_frame_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        decode_answer(raw)


def test_a_workers_result_frame_carries_the_three_fields_the_document_and_the_attachment() -> None:
    for attachment in (None, BLOB):
        result = JobResult(RUN, b'{"id":"abc"}', "abc", "ok", 1, attachment=attachment)
        back = decode_result(encode_result(result))
        assert back == result and back.attachment == attachment and back.document is None
    with pytest.raises(ValueError):
        decode_result(pack(b"[]", b"{}", None))


def test_arq_carries_bytes_raw_beside_its_json_and_plain_json_as_before() -> None:
    envelope = {"t": 1, "f": keys.FUNCTION, "a": [encode_job(Job(code="x = 1"))], "k": {}, "r": BLOB,
                "nested": [{"x": b""}, "text"]}
    raw = keys.serialize(envelope)
    assert keys.deserialize(raw) == envelope
    assert BLOB in raw and len(raw) < len(BLOB) + 400  # the bytes themselves, not base64
    plain = {"t": 1, "r": "ServiceUnavailable('x')"}
    assert keys.serialize(plain) == b'{"t":1,"r":"ServiceUnavailable(\'x\')"}'
    assert keys.deserialize(keys.serialize(plain)) == plain
    assert keys.serialize({"r": ValueError("no")}) == b'{"r":"ValueError(\'no\')"}'


def test_a_kind_without_params_takes_the_base_model_and_nothing_else() -> None:
    assert TABLE.kind(RUN).params is Params
    with pytest.raises(ValueError):
        TABLE.decode(encode_job(Job(code="x = 1")).replace(b'"params":{}', b'"params":{"a":1}'))
