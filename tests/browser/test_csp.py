"""Under the strict Content-Security-Policy (NOTE [security headers] in api/security.py) the
page, a share page, ``/docs``, the page's Export → HTML file and ``doc.save_html``'s file (NOTE
[saved file policy] in frontend/standalone-csp.mjs) all work, and Chromium reports no violation.

Violations are caught twice: the ``securitypolicyviolation`` event (document and shadow roots)
and Chromium's console line (which also covers workers).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from gradtrace.lessons import lesson

pytestmark = pytest.mark.browser

LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`;
  window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI} ${e.sample || ""} at ${where}`);
}, true);
"""


class Watched:
    """A fresh context whose pages record CSP violations, console errors and page errors."""

    def __init__(self, browser: Any, **kwargs: Any) -> None:
        # enforced (NOTE [tests bypass the page's CSP] in tests/conftest.py)
        self.context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=False, **kwargs)
        self.context.add_init_script(LISTEN)
        self.console: list[str] = []
        self.errors: list[str] = []
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.console.append(m.text) if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def until(self, expression: str, timeout_s: float = 60.0) -> None:
        """Wait until ``expression`` is true in the page (polled through ``page.evaluate``:
        ``wait_for_function`` evaluates with ``eval``, which the policy forbids)."""
        deadline = time.monotonic() + timeout_s
        while not self.page.evaluate(f"Boolean({expression})"):
            assert time.monotonic() < deadline, f"still false after {timeout_s} s: {expression}"
            self.page.wait_for_timeout(50)

    def violations(self) -> list[str]:
        events = self.page.evaluate("window.__csp || []")
        lines = [c for c in self.console if re.search(r"Content.Security.Policy|Refused to", c, re.I)]
        return [*events, *lines]

    def check(self) -> None:
        assert self.violations() == [], self.violations()
        assert self.errors == [], self.errors

    def close(self) -> None:
        self.context.close()


@pytest.fixture()
def watched(browser: Any) -> Any:
    w = Watched(browser)
    yield w
    w.close()


def test_the_page_runs_shares_and_exports_with_no_violation(watched: Watched, live_server: Any,
                                                             frontend_bundle: Path, tmp_path: Path) -> None:
    page = watched.page
    response = page.goto(live_server.url + "/")
    assert response is not None and "script-src 'self'" in response.headers["content-security-policy"]
    watched.until("window.gradtrace !== undefined")
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("mlp_loss").title))).click()
    page.get_by_role("button", name=re.compile(r"^Run\b")).click()
    watched.until("Number(document.body.dataset.ready || 0) > 0 && window.gradtrace.app.doc")
    assert page.evaluate("window.gradtrace.app.doc.graph.nodes.length") > 5
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Run as HTML")).click()
    exported = tmp_path / "exported.html"
    info.value.save_as(exported)
    for name in ("View as PNG", "View as SVG"):
        page.get_by_text("Export", exact=True).click()
        with page.expect_download():
            page.get_by_role("button", name=name).click()
    watched.check()
    _open_saved_file(watched.context.browser, exported)


def test_a_share_page_and_a_run_page_have_no_violation(watched: Watched, live_server: Any,
                                                       frontend_bundle: Path) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as api:
        run = api.post("/api/runs", json={"code": lesson("inplace_hazard").code}).json()
        share = api.post("/api/shares", json={"run_id": run["id"]}).json()
    for path in (f"/s/{share['id']}", f"/r/{run['id']}"):
        watched.page.goto(live_server.url + path)
        watched.until("Number(document.body.dataset.ready || 0) > 0")  # drawn
        watched.check()


def test_docs_render_with_no_violation(watched: Watched, live_server: Any) -> None:
    watched.page.goto(live_server.url + "/docs")
    watched.page.wait_for_selector("#operations-runs-create_run_api_runs_post", timeout=30_000)
    watched.check()


def _open_saved_file(browser: Any, path: Path) -> None:
    w = Watched(browser, offline=True)
    try:
        w.page.goto(path.as_uri())
        w.until("document.getElementById('gradtrace').dataset.ready === '1'")
        assert w.page.evaluate("window.gradtrace.viewer.index.nodes.length") > 0
        csp = w.page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content") or ""
        assert "script-src 'sha256-" in csp and "unsafe" not in csp and "http" not in csp, csp
        w.check()
    finally:
        w.close()


def test_the_saved_file_plays_under_its_own_policy(browser: Any, tmp_path: Path, frontend_bundle: Path) -> None:
    import gradtrace  # the in-process recorder: only this test needs torch

    with gradtrace.record() as rec:
        import torch

        w = torch.tensor([0.5, -1.0], requires_grad=True)
        (w.tanh() * 3).sum().backward()
    path = tmp_path / "saved.html"
    rec.document().save_html(str(path))
    _open_saved_file(browser, path)
