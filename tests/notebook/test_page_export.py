"""The page's Export → HTML, and the run page ``/r/{id}`` the notebook links to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from browser.pageutil import run_code
from pageguard import wait_until

pytestmark = pytest.mark.browser

CODE = "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = (x * x).sum()\ny.backward()\n"


def test_export_html_on_the_page_writes_a_file_that_plays_offline(page: Any, live_server: Any, browser: Any,
                                                                  widget_bundles: Path, tmp_path: Path) -> None:
    page.goto(live_server.url + "/")
    wait_until(page, "window.gradtrace !== undefined")
    run_code(page, CODE)
    doc = page.evaluate("window.gradtrace.app.doc")
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name="Run as HTML (plays offline)").click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    assert path.suffix == ".html" and doc["id"] in path.name

    offline = browser.new_context(offline=True)
    try:
        saved = offline.new_page()
        saved.goto(path.as_uri())
        wait_until(saved, "document.getElementById('gradtrace').dataset.ready === '1'", timeout=20_000)
        info2 = saved.evaluate("() => { const v = window.gradtrace.viewer; return { nodes: v.index.nodes.length, "
                               "N: v.timeline.N, code: v.editor.code }; }")
        assert info2["nodes"] == len(doc["graph"]["nodes"]) and info2["N"] > 0
        assert info2["code"] == CODE, "the file carries the code pane"
        saved.locator("#gradtrace #graph").focus()
        saved.keyboard.press("Home")
        saved.keyboard.press("ArrowRight")
        assert saved.locator("#gradtrace #tl-label").inner_text().startswith(f"Step 1/{info2['N']}")
        # the service's explanations travel in the file (GET /api/runs/{id}/explanations)
        fn = next(n for n in doc["graph"]["nodes"] if n["kind"] == "function" and n["name"] != "AccumulateGrad")
        saved.evaluate(f"window.gradtrace.viewer.selectById('{fn['id']}')")
        instance = saved.locator("#gradtrace [data-gt=explain-instance]").first
        instance.wait_for(timeout=10_000)
        assert " = " in instance.inner_text()
    finally:
        offline.close()
    assert page.page_errors == []


def test_a_run_has_a_read_only_page_while_it_is_kept(page: Any, live_server: Any) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        doc = http.post("/api/runs", json={"code": CODE}).json()
        missing = http.get("/r/doesnotexist0000")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    page.goto(f"{live_server.url}/r/{doc['id']}")
    wait_until(page, "Number(document.body.dataset.ready || 0) > 0")
    assert page.title().endswith(f"run {doc['id']}")
    assert page.evaluate("window.gradtrace.app.mode") == "share", "read-only: it never runs anything"
    assert page.evaluate("window.gradtrace.app.doc.id") == doc["id"]
    assert page.page_errors == []
