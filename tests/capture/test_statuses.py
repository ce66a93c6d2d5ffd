"""Every way a snippet can end is a status with a message, never an exception."""

from __future__ import annotations

import sys
from typing import Any

import torch

from gradtrace.schema import SCHEMA_VERSION, canonical_json


def test_syntax_error_gives_its_line(run: Any) -> None:
    doc = run("x = torch.ones(2)\ny = (x +\nprint(y)\n")
    assert doc["status"] == "error"
    assert doc["error"]["type"] == "SyntaxError"
    assert doc["error"]["line"] == 2
    assert doc["graph"]["nodes"] == []


def test_null_byte_in_source_is_an_error_not_a_crash(run: Any) -> None:
    doc = run("x = 1\x00\n")
    assert doc["status"] == "error"
    assert doc["error"]["type"] in ("SyntaxError", "ValueError")


def test_exception_in_a_snippet_function_reports_the_raising_line(run: Any) -> None:
    doc = run("x = torch.ones(2, requires_grad=True)\ny = x * 2\n"
              "def check(v):\n    raise ValueError(f'expected 3 values, got {v.numel()}')\ncheck(y)\n")
    assert doc["status"] == "error"
    assert doc["error"] == {"type": "ValueError", "message": "expected 3 values, got 2", "line": 4,
                            "node": None, "detail": None}
    assert [n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"] == [
        "AccumulateGrad", "MulBackward0"]


def test_system_exit_and_keyboard_interrupt_become_errors(run: Any) -> None:
    for code, kind in (("import sys\nsys.exit(3)\n", "SystemExit"),
                       ("raise KeyboardInterrupt\n", "KeyboardInterrupt")):
        doc = run(code)
        assert doc["status"] == "error"
        assert doc["error"]["type"] == kind
        assert doc["error"]["line"] == code.count("\n")


def test_printing_past_the_cap_stops_with_output_limit_and_a_marker(run: Any) -> None:
    doc = run("x = torch.ones(1, requires_grad=True)\n(x * 2).sum().backward()\n"
              "while True:\n    print('spam' * 100)\n", output_bytes=1000)
    assert doc["status"] == "output_limit"
    assert doc["stdout_truncated"] is True
    assert doc["error"] is None
    assert "1,000 bytes" in doc["message"]
    body, marker = doc["stdout"].rsplit("\n[gradtrace:", 1)
    assert len(body.encode()) == 1000 and "output cut at 1000 bytes" in marker
    assert len(doc["events"]) > 0  # what ran before is kept


def test_stdout_is_kept_and_object_addresses_are_masked(run: Any) -> None:
    doc = run("y = torch.ones(1, requires_grad=True) * 2\nprint(y.grad_fn)\nprint('done')\n")
    assert doc["stdout"] == "<MulBackward0 object at 0x…>\ndone\n"
    assert doc["stdout_truncated"] is False


def test_node_limit_ends_with_graph_limit_and_keeps_what_it_has(run: Any) -> None:
    doc = run("x = torch.ones(1, requires_grad=True)\nfor _ in range(1000):\n    x = x * 1.5\n",
              max_nodes=50)
    assert doc["status"] == "graph_limit"
    assert "50 nodes" in doc["message"]
    assert len(doc["graph"]["nodes"]) == 50
    assert doc["error"] is None


def test_node_limit_is_not_swallowed_by_a_snippet_except(run: Any) -> None:
    doc = run("x = torch.ones(1, requires_grad=True)\ntry:\n    for _ in range(1000):\n"
              "        x = x * 1.5\nexcept Exception:\n    print('swallowed')\n", max_nodes=20)
    assert doc["status"] == "graph_limit"
    assert "swallowed" not in doc["stdout"]


def test_event_limit_ends_with_graph_limit(run: Any) -> None:
    doc = run("x = torch.ones(1, requires_grad=True)\ny = x\nfor _ in range(30):\n    y = y * 2\n"
              "y.backward()\nprint('after')\n", max_events=10)
    assert doc["status"] == "graph_limit"
    assert "10 events" in doc["message"]
    assert sum(1 for e in doc["events"] if e["phase"] == "backward") == 10
    assert "after" not in doc["stdout"]


def test_document_size_limit_ends_with_graph_limit_and_the_document_stays_under_it(run: Any) -> None:
    code = "x = torch.ones(1, requires_grad=True)\ny = x\nfor _ in range(3000):\n    y = y * 1.5\ny.backward()\n"
    doc = run(code, max_document_bytes=1 << 20)
    assert doc["status"] == "graph_limit"
    assert "size limit (1 MB)" in doc["message"]
    assert len(canonical_json(doc)) <= 1 << 20
    assert run(code)["status"] == "ok"


def test_identical_code_and_seed_give_byte_identical_documents(run: Any) -> None:
    code = ("model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))\n"
            "x = torch.randn(4, 8)\nloss = model(x).pow(2).mean()\nloss.backward()\nprint(loss)\n")
    first, second = run(code, seed=7), run(code, seed=7)
    assert canonical_json(first) == canonical_json(second)
    assert first["id"] == second["id"]
    assert run(code, seed=8)["id"] != first["id"]


def test_seed_none_is_accepted_and_recorded(run: Any) -> None:
    doc = run("x = torch.randn(2, requires_grad=True)\nx.sum().backward()\n", seed=None)
    assert doc["status"] == "ok" and doc["seed"] is None


def test_nothing_of_the_recorder_is_left_installed_after_a_run(run: Any) -> None:
    from torch.nn.modules import module as module_mod

    before = (len(module_mod._global_forward_hooks), len(module_mod._global_forward_pre_hooks))
    run("m = nn.Linear(2, 2)\nm(torch.ones(2)).sum().backward()\nraise RuntimeError('late')\n")
    assert (len(module_mod._global_forward_hooks), len(module_mod._global_forward_pre_hooks)) == before
    assert torch.overrides._get_current_function_mode_stack() == []
    assert sys.gettrace() is None
    assert torch.get_default_device() == torch.device("cpu")


def test_document_carries_the_run_fields(run: Any) -> None:
    code = "x = torch.ones(1)\n"
    doc = run(code, seed=3)
    assert (doc["schema_version"], doc["code"], doc["seed"], doc["device"]) == (SCHEMA_VERSION, code, 3, "cpu")
    assert doc["torch_version"] == torch.__version__
