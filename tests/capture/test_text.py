"""Text the snippet produces that is not valid UTF-8 never costs the user the run."""

from __future__ import annotations

import json

from gradtrace.schema import RunDocument, canonical_json
from rundoc import run_doc


def test_a_printed_lone_surrogate_becomes_a_question_mark_and_the_graph_stays() -> None:
    doc = run_doc("x = torch.ones(2, requires_grad=True)\nprint('a\\ud800b')\n(x * 2).sum().backward()\n")
    assert doc["status"] == "ok"
    assert doc["stdout"] == "a?b\n"
    assert any(n["name"] == "MulBackward0" for n in doc["graph"]["nodes"])
    RunDocument.model_validate_json(canonical_json(doc))


def test_an_exception_message_with_a_lone_surrogate_keeps_its_type_and_line() -> None:
    doc = run_doc("x = 1\nraise ValueError('bad \\udfff')\n")
    assert doc["status"] == "error"
    assert doc["error"]["type"] == "ValueError" and doc["error"]["line"] == 2
    assert doc["error"]["message"] == "bad ?"
    assert json.loads(canonical_json(doc))["error"]["message"] == "bad ?"
