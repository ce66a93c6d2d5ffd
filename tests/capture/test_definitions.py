"""The user's names and definitions, held against the program's own objects: intermediates'
variables (``Node.var``), leaves' definition lines (``Node.def_line``), tied parameters
(``Node.tied``), modules' frozen parameters (``ModuleInfo.frozen``) and the blocks run with
gradients off (``analysis.grad_off``), on both kernel sets and across the 15 lessons
(NOTE [variables of intermediates], NOTE [where leaves are defined], NOTE [frozen parameters]
in gradtrace/capture/definitions.py, NOTE [blocks with gradients off] in
gradtrace/analysis/gradoff.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
import pytest
import torch
from torch import nn

from gradtrace.lessons import all_lessons
from gradtrace.schema import RunDocument, document_id
from programs import FINE_TUNE, SCRATCH, TINY_LM, UNTIED_LM
from rundoc import record_doc, run_doc

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"

PROGRAMS = {"tiny_lm": TINY_LM, "untied_lm": UNTIED_LM, "fine_tune": FINE_TUNE, "scratch": SCRATCH}


def _run(code: str, native: bool) -> dict[str, Any]:
    doc = run_doc(code, native=native)
    RunDocument.model_validate(doc)
    assert doc["id"] == document_id(doc)
    assert doc["status"] == "ok", doc.get("error")
    assert not doc.get("recorder_errors"), doc.get("recorder_errors")
    return doc


def _nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    graph = doc["graph"]
    if not isinstance(graph, dict):
        graph = orjson.loads(bytes(graph))
    return list(graph["nodes"])


def _truth(code: str) -> tuple[dict[str, Any], set[int]]:
    """The program run plainly (no recording): its namespace, and the lines it ran with
    gradients off (a line tracer asking torch at every line)."""
    ns: dict[str, Any] = {"torch": torch, "nn": nn, "F": torch.nn.functional}
    off: set[int] = set()
    compiled = compile(code, "<truth>", "exec")

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<truth>":
            return None
        if event == "line" and not torch.is_grad_enabled():
            off.add(frame.f_lineno)
        return trace

    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    sys.settrace(trace)
    try:
        exec(compiled, ns)
    except RuntimeError:  # the lessons that show autograd's errors
        pass
    finally:
        sys.settrace(None)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
    return ns, off


def _assigned_lines(code: str) -> dict[str, list[int]]:
    """Each module-level name's assignment lines (plain ``name = ...``)."""
    out: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.lineno)
    return out


@pytest.fixture(params=[True, False], ids=["core", "twin"])
def native(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_intermediates_carry_their_variable(program: str, native: bool) -> None:
    code = PROGRAMS[program]
    nodes = _nodes(_run(code, native))
    ns, _ = _truth(code)
    by_var = {n["var"]: n for n in nodes if n.get("var")}
    # every module-level variable holding a non-leaf tensor names a node of its grad_fn's type
    for name, value in ns.items():
        if isinstance(value, torch.Tensor) and value.grad_fn is not None and not name.startswith("_"):
            assert name in by_var, (name, sorted(by_var))
            assert by_var[name]["name"] == type(value.grad_fn).__name__, name
    # and every var is a real variable of the program, on a function node of a line that binds it
    assigned = _assigned_lines(code)
    for n in nodes:
        if n.get("var"):
            assert n["kind"] == "function"
            assert n["var"] in assigned, n
            assert n["line"] in assigned[n["var"]], n
    if program == "scratch":  # `h = h * 0.5` three times: each MulBackward0 is `h`
        assert [n["var"] for n in nodes if n["name"] == "MulBackward0"] == ["h", "h", "h"]
    if program == "tiny_lm":  # the forward's locals, seen when the snippet's own forward runs
        assert {"e", "h", "logits", "loss"} <= set(by_var)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_leaves_link_to_their_definition(program: str, native: bool) -> None:
    code = PROGRAMS[program]
    nodes = _nodes(_run(code, native))
    lines = code.splitlines()
    leaves = [n for n in nodes if n["kind"] == "tensor" and n.get("role") == "leaf"]
    assert leaves
    for n in leaves:
        assert n.get("def_line") is not None, n
        assert n["def_line"] <= n["line"], n  # defined before its first use
        text = lines[n["def_line"] - 1]
        if "." in n["name"]:  # a parameter: its module's construction
            assert "nn." in text, (n["name"], text)
        else:
            assert "requires_grad" in text, (n["name"], text)
    if program == "scratch":
        got = {n["name"]: n["def_line"] for n in leaves}
        assert got == {"x": 5, "W": 7, "b": 9}


def test_tied_parameters_are_one_node_named_by_both_paths(native: bool) -> None:
    ns, _ = _truth(TINY_LM)
    assert ns["model"].lm_head.weight is ns["model"].emb.weight  # torch's truth
    nodes = _nodes(_run(TINY_LM, native))
    tied = [n for n in nodes if n.get("tied")]
    assert len(tied) == 1
    assert tied[0]["tied"] == ["model.emb.weight", "model.lm_head.weight"]
    assert tied[0]["name"] == "model.emb.weight"
    assert sum(1 for n in nodes if n.get("name") in ("model.emb.weight", "model.lm_head.weight")) == 1
    # near miss: separate weights
    ns, _ = _truth(UNTIED_LM)
    assert ns["model"].lm_head.weight is not ns["model"].emb.weight
    nodes = _nodes(_run(UNTIED_LM, native))
    assert not [n for n in nodes if n.get("tied")]
    assert {"model.emb.weight", "model.lm_head.weight"} <= {n.get("name") for n in nodes}


def test_one_module_reached_from_two_variables_is_not_tied(native: bool) -> None:
    code = H + "net = nn.Sequential(nn.Linear(2, 2))\nfirst = net[0]\nnet(torch.randn(1, 2)).sum().backward()\n"
    assert not [n for n in _nodes(_run(code, native)) if n.get("tied")]


def test_frozen_parameters_and_no_grad_blocks(native: bool) -> None:
    doc = _run(FINE_TUNE, native)
    ns, off = _truth(FINE_TUNE)
    truth = {}
    for path, module in ns["backbone"].named_modules(prefix="backbone"):
        frozen = [k for k, p in module.named_parameters(recurse=False) if not p.requires_grad]
        if frozen:
            truth[path] = frozen
    got = {m["path"]: m["frozen"] for m in doc["modules"] if m.get("frozen")}
    assert got == truth == {"backbone.0": ["weight", "bias"], "backbone.2": ["weight", "bias"]}
    blocks = doc["analysis"]["grad_off"]
    assert blocks == [{"kind": "no_grad", "line": 10, "start": 11, "end": 12}]
    assert off - {10} == {11, 12}  # torch's truth (the `with` line runs again on leaving)


def test_leaf_cut_off_hint_points_at_the_no_grad_block() -> None:
    code = H + ("w = torch.randn(3, requires_grad=True)\nv = torch.randn(3, requires_grad=True)\n"
                "u = w * 3\nwith torch.no_grad():\n    h = u * 2\nloss = (h * v).sum()\nloss.backward()\n")
    doc = _run(code, True)
    hints = [h for h in doc["analysis"]["hints"] if h["code"] == "leaf-cut-off"]
    assert len(hints) == 1
    evidence = {e["label"]: e["value"] for e in hints[0]["evidence"]}
    assert evidence["block"] == "torch.no_grad() at line 8, line 9"
    assert hints[0]["line"] == 9
    assert doc["analysis"]["grad_off"] == [{"kind": "no_grad", "line": 8, "start": 9, "end": 9}]


@pytest.mark.parametrize("lesson", [lesson.stem for lesson in all_lessons()])
def test_lessons_say_only_what_is_true(lesson: str) -> None:
    """No false claim on any lesson: variables name nodes of their grad_fn's type, leaves are
    defined before their first use, nothing is tied or frozen that torch does not say is, and
    the blocks with gradients off are exactly the lines torch ran with gradients off."""
    code = next(lesson_.code for lesson_ in all_lessons() if lesson_.stem == lesson)
    doc = run_doc(code)
    nodes = _nodes(doc)
    ns, off = _truth(code)
    lines = code.splitlines()
    for n in nodes:
        if n.get("def_line") is not None:  # (a first use in a function may come before it)
            text = lines[n["def_line"] - 1]
            assert "requires_grad" in text or "nn." in text or "Parameter" in text, (n, text)
        assert not n.get("tied"), n  # no lesson ties weights
        if n.get("var"):
            v = ns.get(n["var"])
            assert n["var"] in code and n["kind"] == "function", n
            if isinstance(v, torch.Tensor) and v.grad_fn is not None:
                # the variable's last value is a node of some type; its first binding may differ
                assert type(v.grad_fn).__name__ in {m["name"] for m in nodes if m.get("var") == n["var"]}
    frozen_truth = {}
    for name, value in ns.items():
        if isinstance(value, nn.Module):
            for path, module in value.named_modules(prefix=name):
                frozen = [k for k, p in module.named_parameters(recurse=False) if not p.requires_grad]
                if frozen:
                    frozen_truth[path] = frozen
    got = {m["path"]: m["frozen"] for m in doc.get("modules") or [] if m.get("frozen")}
    assert set(got) <= set(frozen_truth)
    blocks = (doc.get("analysis") or {}).get("grad_off") or []
    covered = {line for b in blocks for line in range(b["start"], b["end"] + 1)}
    # (a `with` line runs again, with gradients still off, when its block is left)
    assert off <= covered | {b["line"] for b in blocks}, (off, blocks)
    ran = _ran_lines(code)
    assert covered & ran <= off, (covered & ran, off)


def _ran_lines(code: str) -> set[int]:
    lines: set[int] = set()
    compiled = compile(code, "<ran>", "exec")

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<ran>":
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return trace

    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    sys.settrace(trace)
    try:
        exec(compiled, {"torch": torch, "nn": nn, "F": torch.nn.functional})
    except RuntimeError:
        pass
    finally:
        sys.settrace(None)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
    return lines


def test_record_names_intermediates_by_a_functions_real_locals(native: bool) -> None:
    """In process, the variables are the frame's own: those of a function of this file, which
    ``gradtrace.record()`` traces as the snippet (NOTE [the snippet's frames] in frames.py)."""
    import gradtrace

    seen: dict[str, Any] = {}

    def forward(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        a = x @ w
        h = torch.tanh(a)
        out = (h * h).sum()
        seen.update(locals())  # the frame's real locals, as torch left them
        return out

    with gradtrace.record(native=native) as rec:
        x = torch.randn(2, 3, requires_grad=True)
        w = torch.randn(3, 3, requires_grad=True)
        loss = forward(x, w) * 2
        loss.backward()
    nodes = _nodes(record_doc(rec))
    by_var = {n["var"]: n for n in nodes if n.get("var")}
    assert {n.var for n in rec.document().graph.nodes if n.var} == set(by_var)  # in Python too
    for name in ("a", "h", "out"):
        assert by_var[name]["name"] == type(seen[name].grad_fn).__name__, (name, by_var.get(name))
    assert by_var["loss"]["name"] == type(loss.grad_fn).__name__ == "MulBackward0"
    assert {n["name"]: n.get("def_line") for n in nodes if n.get("role") == "leaf"} == {
        "x": _line_of("x = torch.randn(2, 3, requires_grad=True)"),
        "w": _line_of("w = torch.randn(3, 3, requires_grad=True)")}


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.strip() == text)


GRAD_OFF_FORMS = {
    "decorator": ("@torch.no_grad()\ndef evaluate(m, x):\n    y = m(x)\n    return y.sum()\n"
                  "net = nn.Linear(2, 1)\nevaluate(net, torch.randn(3, 2))\n", ["no_grad"]),
    "bare_import": ("from torch import no_grad\nw = torch.randn(2, requires_grad=True)\nwith no_grad():\n"
                    "    w.mul_(0.5)\n(w * 2).sum().backward()\n", ["no_grad"]),
    "inference_mode": ("w = torch.randn(2, requires_grad=True)\nwith torch.inference_mode():\n"
                       "    v = w * 2\n    u = v + 1\n(w * 3).sum().backward()\n", ["inference_mode"]),
    "set_grad_enabled": ("w = torch.randn(2, requires_grad=True)\nwith torch.set_grad_enabled(False):\n"
                         "    v = w * 2\nwith torch.set_grad_enabled(True):\n    u = w * 2\nu.sum().backward()\n",
                         ["set_grad_enabled"]),
    "nested_and_two_items": ("import contextlib\nw = torch.randn(2, requires_grad=True)\n"
                             "with contextlib.nullcontext(), torch.no_grad():\n    v = w * 2\n"
                             "    with torch.enable_grad():\n        u = w * 3\n    z = v + 1\n"
                             "u.sum().backward()\n", ["no_grad", "no_grad"]),
    "inference_mode_false": ("w = torch.randn(2, requires_grad=True)\nwith torch.inference_mode(False):\n"
                             "    v = w * 2\nv.sum().backward()\n", []),
}


@pytest.mark.parametrize("form", sorted(GRAD_OFF_FORMS))
def test_blocks_with_gradients_off_are_the_lines_torch_ran_with_gradients_off(form: str) -> None:
    """Each form the analysis reads (NOTE [blocks with gradients off]) against torch's own
    answer: every line torch ran with gradients off lies in a block (or is its `with` line,
    run again on leaving), and no line a block claims ran with gradients on (an inner
    `enable_grad` block is cut out)."""
    code, kinds = GRAD_OFF_FORMS[form]
    code = H + code
    doc = _run(code, True)
    blocks = (doc.get("analysis") or {}).get("grad_off") or []
    assert [b["kind"] for b in blocks] == kinds
    _, off = _truth(code)
    covered = {line for b in blocks for line in range(b["start"], b["end"] + 1)}
    assert off <= covered | {b["line"] for b in blocks}, (off, blocks)
    assert covered & _ran_lines(code) <= off, (covered, off, blocks)
    if form == "nested_and_two_items":  # the inner enable_grad's body (line 10) is cut out
        assert [(b["start"], b["end"]) for b in blocks] == [(8, 9), (11, 11)]


def test_a_stacked_ensemble_called_functionally_gets_no_warning_from_the_recorder(native: bool) -> None:
    """The model-ensembling tutorial's ``functional_call`` (capture/faithful_programs.py) puts a
    slice of a stacked tensor (a non-leaf) in each parameter's place: the module's unreached
    parameters are found at the end without reading such a tensor's ``.grad``, which torch warns
    about (in a notebook, the warning printed under the user's cell; with warnings as errors, a
    failure)."""
    import warnings

    import torch.nn.functional as F

    import gradtrace
    from capture.faithful_programs import PROGRAMS

    ns: dict[str, Any] = {"__name__": "__main__", "torch": torch, "nn": nn, "F": F}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with gradtrace.record(native=native, _filename="<snippet>", _namespace=ns, _fresh=True) as rec:
            exec(compile(PROGRAMS["functional_call_stacked_ensemble"], "<snippet>", "exec"), ns)
        doc = record_doc(rec)
    assert doc["status"] == "ok" and not doc.get("recorder_errors") and ns["weights"].grad is not None
    ours = [str(w.message)[:80] for w in caught if "gradtrace" in w.filename]
    assert ours == []
