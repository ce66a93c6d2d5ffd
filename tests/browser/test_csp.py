"""Under the strict Content-Security-Policy (NOTE [security headers] and NOTE [styles under the
policy] in api/security.py) the page, a share page, a run page, the compare page, every HTML
error page, ``/docs``, the page's Export → HTML file and ``doc.save_html``'s file (NOTE [saved
file policy] in frontend/standalone-csp.mjs) all work and are styled as designed.

Every browser test runs under the pages' policies and fails on any violation (NOTE [every page
behaves] in tests/pageguard.py): the tests here add what only they check, that no policy says
``unsafe-inline`` and that the styles the policy could refuse really apply.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser.pageutil import open_saved_file
from gradtrace.lessons import lesson
from pageguard import expect_http_error, wait_until

pytestmark = pytest.mark.browser


def _strict(policy: str) -> None:
    assert "script-src 'self'" in policy and "unsafe" not in policy, policy
    assert "style-src 'self'" in policy, policy


def test_the_page_runs_shares_and_exports_under_its_policy(page: Any, live_server: Any,
                                                            frontend_bundle: Path, tmp_path: Path) -> None:
    response = page.goto(live_server.url + "/")
    assert response is not None
    _strict(response.headers["content-security-policy"])
    wait_until(page, "window.gradtrace !== undefined")
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("mlp_loss").title))).click()
    page.get_by_role("button", name=re.compile(r"^Run\b")).click()
    wait_until(page, "Number(document.body.dataset.ready || 0) > 0 && window.gradtrace.app.doc", timeout=60_000)
    assert page.evaluate("window.gradtrace.app.doc.graph.nodes.length") > 5
    # CodeMirror's <style> carries the answer's nonce (NOTE [style nonce]): the editor is styled.
    assert page.evaluate("getComputedStyle(document.querySelector('.cm-editor')).display") == "flex"
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Run as HTML")).click()
    exported = tmp_path / "exported.html"
    info.value.save_as(exported)
    for name in ("View as PNG", "View as SVG"):
        page.get_by_text("Export", exact=True).click()
        with page.expect_download():
            page.get_by_role("button", name=name).click()
    _check_saved_file(page.context.browser, exported)


def _pane_is_styled(page: Any, side: str) -> None:
    """The pane's viewer has its CSS (adopted in its shadow root) and drew its graph."""
    got = page.evaluate("""(side) => {
        const root = document.getElementById(`pane-${side}`).shadowRoot;
        const graph = root.querySelector('#graph');
        return { sheets: root.adoptedStyleSheets.length, styles: root.querySelectorAll('style').length,
                 transport: getComputedStyle(root.querySelector('.gt-transport')).display,
                 graphH: graph.getBoundingClientRect().height, pageH: document.documentElement.scrollHeight };
    }""", side)
    assert got["styles"] == 0 and got["sheets"] >= 1, got
    assert got["transport"] == "none", got  # the compare page's own rule for its panes applies
    assert 100 < got["graphH"] < 800 and got["pageH"] <= 2 * 800, got


def test_a_share_page_a_run_page_and_the_compare_page_render_under_their_policy(
        page: Any, live_server: Any, frontend_bundle: Path) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as api:
        run = api.post("/api/runs", json={"code": lesson("inplace_hazard").code}).json()
        other = api.post("/api/runs", json={"code": lesson("chain_rule").code}).json()
        share = api.post("/api/shares", json={"run_id": run["id"]}).json()
    for path in (f"/s/{share['id']}", f"/r/{run['id']}"):
        response = page.goto(live_server.url + path)
        assert response is not None
        _strict(response.headers["content-security-policy"])
        wait_until(page, "Number(document.body.dataset.ready || 0) > 0", timeout=60_000)
    response = page.goto(f"{live_server.url}/c/{run['id']}..{other['id']}")
    assert response is not None
    _strict(response.headers["content-security-policy"])
    wait_until(page, "document.body.dataset.ready === '1'", timeout=90_000)
    for side in ("a", "b"):
        _pane_is_styled(page, side)


@pytest.mark.parametrize("path", ["/s/doesnotexist", "/r/doesnotexist", "/c/doesnotexist..norhere", "/no/such/page"])
def test_every_error_page_is_styled_under_its_policy(page: Any, live_server: Any, path: str) -> None:
    expect_http_error(page, 404, path)
    response = page.goto(live_server.url + path)
    assert response is not None and response.status == 404
    policy = response.headers["content-security-policy"]
    _strict(policy)
    assert re.search(r"style-src 'self' 'sha256-[A-Za-z0-9+/=]+'", policy), policy
    card = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('main'));
        return { radius: s.borderTopLeftRadius, border: s.borderTopStyle,
                 display: getComputedStyle(document.body).display }; }""")
    assert card == {"radius": "10px", "border": "solid", "display": "grid"}, card


def test_docs_render_under_their_policy(page: Any, live_server: Any) -> None:
    page.goto(live_server.url + "/docs")
    page.wait_for_selector("#operations-runs-create_run_api_runs_post", timeout=30_000)


def _check_saved_file(browser: Any, path: Path) -> None:
    with open_saved_file(browser, path) as opened:
        page = opened.page
        assert page.evaluate("window.gradtrace.viewer.index.nodes.length") > 0
        csp = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content") or ""
        assert "script-src 'sha256-" in csp and "unsafe" not in csp and "http" not in csp, csp
        styled = page.evaluate("""() => { const root = document.getElementById('gradtrace').shadowRoot;
            return [root.adoptedStyleSheets.length, root.querySelectorAll('style').length,
                    getComputedStyle(root.querySelector('.gt-viewer')).display]; }""")
        assert styled[0] >= 1 and styled[1] == 0 and styled[2] == "flex", styled
        # the file itself, and the layout worker it made from its own text (blob:)
        assert [u for u in opened.requests if not u.startswith("blob:")] == [path.as_uri()], opened.requests


def test_the_saved_file_plays_under_its_own_policy(browser: Any, tmp_path: Path, frontend_bundle: Path) -> None:
    import gradtrace  # the in-process recorder: only this test needs torch

    with gradtrace.record() as rec:
        import torch

        w = torch.tensor([0.5, -1.0], requires_grad=True)
        (w.tanh() * 3).sum().backward()
    path = tmp_path / "saved.html"
    rec.document().save_html(str(path))
    _check_saved_file(browser, path)
