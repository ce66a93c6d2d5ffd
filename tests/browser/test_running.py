"""Writing and running snippets: typed code, errors marked where they happened, limit results,
refused requests, cancelling, and the device selector."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import node_texts, ready_generation, run_code, set_code, wait_drawn
from gradtrace.lessons import lesson
from gradtrace.schema import SCHEMA_VERSION
from pageguard import expect_http_error, wait_until

pytestmark = pytest.mark.browser


def test_typed_snippet_runs_with_ctrl_enter_and_shows_the_leaf_gradient(playground: Any) -> None:
    page = playground
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    # Typed key by key, as a user would; d(w³)/dw = 3w² = 27 at w = 3.
    page.keyboard.type("import torch\nw = torch.tensor(3.0, requires_grad=True)\nz = w * w * w\n"
                       "z.backward()\nprint(w.grad)\n")
    before = ready_generation(page)
    page.keyboard.press("Control+Enter")
    wait_drawn(page, before)
    (w_item,) = [t for t in node_texts(page) if t.startswith("w — ")]
    assert re.search(r"grad 27(\.0*)?$", w_item), w_item
    expect(page.locator("#stdout")).to_have_text("tensor(27.)")


def test_inplace_error_is_marked_in_the_editor_and_on_the_graph(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("inplace_hazard").title))).click()
    run_code(page)
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc["status"] == "error" and doc["error"]["line"] is not None
    expect(page.locator("#status-badge")).to_have_text("error")
    expect(page.locator("#error-box")).to_contain_text("modified by an inplace operation")
    expect(page.locator("#error-box")).to_contain_text(f"line {doc['error']['line']}")
    error_line = page.locator(".cm-line.gt-line-error")
    expect(error_line).to_have_count(1)
    code_line = page.evaluate("window.gradtrace.app.editor.code").split("\n")[doc["error"]["line"] - 1]
    assert error_line.inner_text() == code_line
    expect(page.locator(".gt-mark-error")).to_have_count(1)
    if doc["error"].get("node"):
        node = next(n for n in doc["graph"]["nodes"] if n["id"] == doc["error"]["node"])
        marked = page.locator('#node-list button[data-error="true"]')
        expect(marked).to_have_count(1)
        assert marked.inner_text().startswith(node["name"])
    page.screenshot(path=str(artifacts_dir / "error-inplace.png"))


def test_output_limit_shows_a_status_badge_with_the_message(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, 'print("x" * 200000)\n')
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc["status"] == "output_limit"
    badge = page.locator("#status-badge")
    expect(badge).to_have_text(f"Output limit: {doc['message']}")
    expect(badge).to_have_class(re.compile("gt-status-output_limit"))
    page.screenshot(path=str(artifacts_dir / "limit-output.png"))


def test_a_run_stopped_at_the_time_limit_shows_the_graph_it_built_and_where_it_stopped(
        playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, "import time\nw = torch.ones(3, requires_grad=True)\nh = w\nwhile True:\n"
                   "    h = torch.tanh(h * 1.01)\n    time.sleep(0.05)\n")
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc["status"] == "timeout" and doc["error"]["line"] in (5, 6)
    expect(page.locator("#status-badge")).to_have_text(f"Time limit: {doc['message']}")
    expect(page.locator(".cm-line.gt-line-error")).to_have_count(1)
    tanh = [t for t in node_texts(page) if t.startswith("TanhBackward0")]
    assert tanh, "the graph built before the limit is drawn"  # how much depends on the CPU it got
    page.screenshot(path=str(artifacts_dir / "limit-timeout-partial-graph.png"))


def test_refused_request_shows_the_server_message(playground: Any) -> None:
    page = playground
    config = page.evaluate("JSON.parse(document.getElementById('gt-config').textContent)")
    limit_kb = config["limits"]["max_code_kb"]
    expect_http_error(page, 413, "/api/runs")  # the refusal this test asks for
    page.locator(".cm-content").click()
    page.evaluate(f"window.gradtrace.app.editor.setCode('#' + 'x'.repeat({limit_kb} * 1024 + 10))")
    page.get_by_role("button", name="Run").click()
    badge = page.locator("#status-badge")
    expect(badge).to_contain_text("Refused (413)")
    expect(page.get_by_role("button", name="Run")).to_be_enabled()


def test_invalid_seed_is_refused_before_sending(playground: Any) -> None:
    page = playground
    page.get_by_label("Seed").fill("-3")
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#status-badge")).to_contain_text("seed must be a whole number")


def test_a_run_in_flight_shows_progress_and_can_be_cancelled(playground: Any) -> None:
    page = playground
    page.locator(".cm-content").click()
    page.evaluate("window.gradtrace.app.editor.setCode('import time\\ntime.sleep(2)\\n')")
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#progress")).to_contain_text("Running")
    expect(page.get_by_role("button", name="Run")).to_be_disabled()
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#status-badge")).to_contain_text("Cancelled")
    expect(page.locator("#progress")).to_be_hidden()
    expect(page.get_by_role("button", name="Run")).to_be_enabled()


def test_cuda_is_disabled_when_the_server_has_none(playground: Any) -> None:
    page = playground
    cuda = page.evaluate("JSON.parse(document.getElementById('gt-config').textContent).cuda_available")
    option = page.locator('#device option[value="cuda"]')
    assert option.is_disabled() == (not cuda)
    assert page.get_by_label("Device").input_value() == "cpu"


def test_a_missing_bundle_is_explained_on_the_page(page: Any, live_server: Any) -> None:
    expect_http_error(page, 404, "/dist/app.js")  # the checkout this test stands for has no bundle
    page.route("**/dist/app.js", lambda route: route.fulfill(status=404, body="not built"))
    page.goto(live_server.url + "/")
    expect(page.locator("#graph-empty")).to_contain_text("make frontend")


def test_every_limit_status_gets_a_badge_with_the_server_message(playground: Any) -> None:
    page = playground
    labels = {"timeout": "Time limit", "memory_limit": "Memory limit", "graph_limit": "Graph limit",
              "crashed": "Crashed"}
    for status, label in labels.items():
        message = f"the run stopped: {status} (test message)"
        doc = {"schema_version": SCHEMA_VERSION, "id": f"t-{status}", "status": status, "error": None,
               "stdout": "partial\n", "device": "cpu", "graph": {"nodes": [], "edges": []}, "events": [],
               "message": message}
        page.evaluate("doc => window.gradtrace.loadDocument(doc)", doc)
        badge = page.locator("#status-badge")
        expect(badge).to_have_text(f"{label}: {message}")
        expect(badge).to_have_class(re.compile(f"gt-status-{status}"))
        expect(page.locator("#graph-empty")).to_have_text("This run created no autograd node.")
        expect(page.locator("#stdout")).to_have_text("partial")


def test_the_code_being_written_survives_a_reload(playground: Any) -> None:
    page = playground
    set_code(page, "import torch\n# my draft\n")
    page.reload()
    wait_until(page, "window.gradtrace !== undefined")
    assert page.evaluate("window.gradtrace.app.editor.code") == "import torch\n# my draft\n"
