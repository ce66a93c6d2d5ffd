"""The lessons' teaching points, as data in the document (not just survived)."""

from __future__ import annotations

from typing import Any

from conftest import lesson_code, line_of


def _example(run: Any, stem: str) -> dict[str, Any]:
    return run(lesson_code(stem))


def _node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in doc["graph"]["nodes"] if n["id"] == node_id)


def test_second_backward_without_retain_graph_reports_line_node_and_freed_tensors(run: Any) -> None:
    doc = _example(run, "06_graph_freed")
    assert doc["status"] == "error"
    err = doc["error"]
    assert err["type"] == "RuntimeError" and err["line"] == line_of("06_graph_freed", "z.backward()", 2)
    node = _node(doc, err["node"])
    assert node["name"] == "MulBackward0" and node["line"] == line_of("06_graph_freed", "z = x * x")
    assert {s["name"] for s in node["saved"]} == {"self", "other"}
    assert all(s["freed_after_pass"] == 2 for s in node["saved"])
    assert "freed after pass 2" in err["detail"]
    flags = [(p["retain_graph"], p["completed"]) for p in doc["passes"]]
    assert flags == [(True, True), (False, True), (False, True), (False, False)]
    # retain_graph=True freed nothing; the next pass freed the 8 bytes of x saved twice
    assert [p["freed_bytes"] for p in doc["passes"][:2]] == [0, 8]


def test_inplace_change_of_a_saved_tensor_names_the_invalidated_node(run: Any) -> None:
    doc = _example(run, "08_inplace_hazard")
    err = doc["error"]
    stem = "08_inplace_hazard"
    assert err["line"] == line_of(stem, "y.sum().backward()") and "inplace" in err["message"]
    node = _node(doc, err["node"])
    assert node["name"] == "ExpBackward0" and node["line"] == line_of(stem, "y = x.exp()")
    add_line = line_of(stem, "y.add_(1)")
    assert "'result'" in err["detail"] and f"`add_` at line {add_line}" in err["detail"]
    assert err["inplace_line"] == add_line


def test_inplace_update_under_no_grad_of_a_saved_leaf_is_traced_to_its_line(run: Any) -> None:
    doc = run("import torch\nw = torch.ones(3, requires_grad=True)\ny = (w * w).sum()\n"
              "with torch.no_grad():\n    w.add_(1)\ny.backward()\n")
    err = doc["error"]
    assert (err["line"], err["inplace_line"]) == (6, 5)
    assert _node(doc, err["node"])["name"] == "MulBackward0"


def test_detach_and_no_grad_cuts_are_tensor_nodes_with_their_source(run: Any) -> None:
    doc = _example(run, "07_detach_and_no_grad")
    cuts = {n["name"]: n for n in doc["graph"]["nodes"] if n["role"] == "cut"}
    stem = "07_detach_and_no_grad"
    assert cuts["z"]["cut"]["kind"] == "detach" and cuts["z"]["cut"]["line"] == line_of(stem, "z = y.detach()")
    assert cuts["s"]["cut"]["kind"] == "no_grad" and cuts["s"]["cut"]["line"] == line_of(stem, "s = x * 10")
    assert _node(doc, cuts["z"]["cut"]["source"])["name"] == "MulBackward0"
    assert _node(doc, cuts["s"]["cut"]["source"])["name"] == "x"


def test_create_graph_nodes_are_marked_with_their_pass(run: Any) -> None:
    doc = _example(run, "13_double_backward")
    p0, p1 = doc["passes"]
    assert (p0["api"], p0["create_graph"], p0["retain_graph"]) == ("torch.autograd.grad", True, True)
    assert (p1["api"], p1["create_graph"]) == ("Tensor.backward", False)
    made = [n for n in doc["graph"]["nodes"] if n["created_in_pass"] == 0]
    line = line_of("13_double_backward", "torch.autograd.grad(")
    assert made and all(n["kind"] == "function" and n["line"] == line for n in made)
    x = next(n for n in doc["graph"]["nodes"] if n["name"] == "x")
    assert x["grad"]["values"] == 18.0


def test_grad_accumulation_across_passes_shows_in_events_and_history(run: Any) -> None:
    doc = _example(run, "09_accumulating_grads")
    w = next(n for n in doc["graph"]["nodes"] if n["name"] == "w")
    assert [h["values"] for h in w["grad_history"]] == [-8.0, -16.0, -24.0]
    acc = [e for e in doc["events"] if e["phase"] == "backward" and e["grad"] is not None]
    assert [(e["pass"], e["grad"]["values"]) for e in acc] == [(0, -8.0), (1, -16.0), (2, -24.0)]


def test_memory_counts_saved_bytes_per_node_and_what_backward_freed(run: Any) -> None:
    doc = _example(run, "04_mlp_loss")
    fns = [n for n in doc["graph"]["nodes"] if n["kind"] == "function"]
    assert all(n["saved_bytes"] == sum(s["bytes"] for s in n["saved"]) for n in fns)
    addmm = [n for n in fns if n["name"] == "AddmmBackward0"]
    assert any(s["is_parameter"] for n in addmm for s in n["saved"])
    assert any(s["is_input"] for n in addmm for s in n["saved"])  # x, fed in by the snippet
    activations = sum(s["bytes"] for n in fns for s in n["saved"] if not s["is_parameter"])
    assert doc["passes"][0]["freed_bytes"] == activations == doc["memory"]["freed_bytes_total"]
    assert doc["memory"]["saved_bytes_total"] >= activations


def test_tensor_hooks_that_change_a_gradient_show_before_and_after(run: Any) -> None:
    doc = run("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 3\n"
              "y.register_hook(lambda g: g * 2)\ny.sum().backward()\n")
    changed = [e for e in doc["events"] if e["changed_by_hook"]]
    assert len(changed) == 1
    (change,) = changed[0]["hook_changes"]
    assert change["before"]["values"] == [1.0, 1.0] and change["after"]["values"] == [2.0, 2.0]
    assert changed[0]["grad_outputs"][0]["values"] == [2.0, 2.0]


def test_checkpointed_nodes_mark_their_saved_tensors_unread(run: Any) -> None:
    doc = _example(run, "12_checkpoint_memory")
    assert doc["status"] == "ok"
    tanh = [n for n in doc["graph"]["nodes"] if n["name"] == "TanhBackward0"]
    assert len(tanh) == 4 and all(n.get("saved_unread") for n in tanh)
    assert {n["module"] for n in tanh} == {"block.1"}


def test_compiled_region_is_one_node_on_the_line_of_the_compiled_body(run: Any) -> None:
    doc = _example(run, "15_compiled")
    names = [(n["name"], n["line"]) for n in doc["graph"]["nodes"] if n["kind"] == "function"]
    # f (the compiled frame, at its `def` line) is what ran when `compiled(x)` was called
    body = line_of("15_compiled", "def f(x):")
    assert names == [("AccumulateGrad", body), ("CompiledFunctionBackward", body)]
    assert doc["stdout"].startswith("CompiledFunctionBackward")


def test_reading_grad_or_shape_under_no_grad_is_not_a_cut(run: Any) -> None:
    """A manual SGD step reads ``w.grad`` under no_grad: a tensor without history from one with
    history, but not computed from it; ``zeros_like(w)`` takes its shape only. Only what is
    computed from ``w`` there is a cut."""
    doc = run("import torch\nw = torch.ones(3, requires_grad=True)\n(w * 2).sum().backward()\n"
              "with torch.no_grad():\n    g = w.grad\n    w -= 0.1 * w.grad\n    d = w * 2\n"
              "    m = torch.zeros_like(w)\n    n = w.new_ones(2)\n")
    cuts = [(n["name"], n["cut"]["kind"], n["cut"]["line"]) for n in doc["graph"]["nodes"]
            if n["role"] == "cut"]
    assert cuts == [("d", "no_grad", 7)]  # not g (a read of .grad), m, n (w's shape only)


def test_clipping_gradients_adds_no_cut_nodes(run: Any) -> None:
    doc = run("import torch\nfrom torch import nn\nmodel = nn.Linear(3, 2)\n"
              "loss = model(torch.ones(4, 3)).sum()\nloss.backward()\n"
              "nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n")
    assert doc["status"] == "ok", doc["error"]
    assert [n for n in doc["graph"]["nodes"] if n["role"] == "cut"] == []


def test_cuts_made_inside_library_code_are_not_the_snippets(run: Any) -> None:
    """``gradcheck`` detaches and reads ``.data`` internally: not cuts the snippet made on its
    line (NOTE [who called torch]); the snippet's own ``detach()``s, and ops it calls under
    no_grad through torch's Python functions and their wrappers, still are."""
    doc = _example(run, "10_finite_difference_check")
    cuts = [(n["cut"]["kind"], n["cut"]["line"]) for n in doc["graph"]["nodes"] if n["role"] == "cut"]
    line = line_of("10_finite_difference_check", "numeric = ")
    assert cuts == [("detach", line), ("detach", line)]
    doc = run("import torch\nimport torch.nn.functional as F\nx = torch.randn(1, 1, 4, 4, requires_grad=True)\n"
              "with torch.no_grad():\n    p = F.max_pool2d(x, 2)\n    n = torch.norm(x)\n    m = x.norm()\n")
    cuts = [(n["name"], n["cut"]["line"]) for n in doc["graph"]["nodes"] if n["role"] == "cut"]
    assert cuts == [("p", 5), ("n", 6), ("m", 7)]
