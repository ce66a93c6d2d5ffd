"""The guard every browser test runs under (NOTE [every page behaves] in tests/pageguard.py)
reports each kind of misbehaviour, and lets through exactly the error answers a test declares.

The page here is the test's own (served by Playwright's router, under a strict policy of its
own): it does each wrong thing once, so the guard is shown to catch what the other tests rely
on it to catch.
"""

from __future__ import annotations

from typing import Any

import pytest

from pageguard import expect_http_error, guard_of, wait_until

pytestmark = pytest.mark.browser

ORIGIN = "http://guard.test"
POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'"
PAGE = """<!doctype html><html><head><title>misbehaving</title><link rel="icon" href="/icon.png">
<style>body { color: red }</style></head><body><p>hello</p>
<img src="/missing.png" alt="">
<script src="/app.js"></script></body></html>"""
APP = """console.error("boom");
(async () => {
  await fetch("/refused").catch(() => {});
  await fetch("http://elsewhere.test/data").catch(() => {});
  setTimeout(() => { document.body.dataset.done = "1"; throw new Error("uncaught here"); }, 0);
})();
"""


def _serve(route: Any) -> None:
    path = route.request.url.removeprefix(ORIGIN)
    if path == "/":
        route.fulfill(status=200, body=PAGE, headers={"content-type": "text/html", "content-security-policy": POLICY})
    elif path == "/app.js":
        route.fulfill(status=200, body=APP, headers={"content-type": "text/javascript"})
    elif path == "/blank":
        route.fulfill(status=200, body='<!doctype html><title>ok</title><link rel="icon" href="/icon.png">',
                      headers={"content-type": "text/html"})
    elif path == "/icon.png":
        route.fulfill(status=204, body="")
    elif path == "/refused":
        route.abort("connectionrefused")
    else:
        route.fulfill(status=404, body="no", headers={"content-type": "text/plain"})


def _all_reported(page: Any) -> list[str]:
    """The guard's reports once the page has done everything (its last act, the uncaught error,
    is reported too)."""
    wait_until(page, "document.body.dataset.done === '1'")
    guard = guard_of(page)
    seen, still = -1, 0
    for _ in range(500):  # until the last report is in and no other comes for 10 polls
        done = any("uncaught here" in p for p in guard.problems)
        still = still + 1 if len(guard.problems) == seen else 0
        seen = len(guard.problems)
        if done and still >= 10:
            break
        page.wait_for_timeout(20)
    return guard.take()


def test_the_guard_reports_each_kind_of_misbehaviour(browser: Any) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route(ORIGIN + "/**", _serve)
        page.goto(ORIGIN + "/")
        found = _all_reported(page)
    finally:
        context.close()
    text = "\n".join(found)
    assert "policy violation on http://guard.test/: style-src-elem refused inline" in text, text
    assert "connect-src refused http://elsewhere.test/data" in text, text
    assert "console error on http://guard.test/: boom" in text, text
    assert "uncaught error on http://guard.test/: uncaught here" in text, text
    assert "request failed: GET http://guard.test/refused: net::ERR_CONNECTION_REFUSED" in text, text
    assert "answer 404 to GET http://guard.test/missing.png" in text, text
    assert "Failed to load resource: the server responded with a status of 404" in text, text


def test_a_declared_error_answer_is_let_through_and_no_other(browser: Any) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.route(ORIGIN + "/**", _serve)
        page.goto(ORIGIN + "/blank")
        expect_http_error(page, 404, "/missing.png")
        page.evaluate(f"() => fetch('{ORIGIN}/missing.png')")
        assert guard_of(page).take() == []
        page.evaluate(f"() => fetch('{ORIGIN}/other.png')")
        found = guard_of(page).take()
    finally:
        context.close()
    assert any("answer 404 to GET http://guard.test/other.png" in p for p in found), found


def test_a_page_made_by_the_browser_shortcut_is_guarded_too(browser: Any) -> None:
    page = browser.new_page()  # a context of its own, made with the page
    try:
        page.route(ORIGIN + "/**", _serve)
        page.goto(ORIGIN + "/")
        found = _all_reported(page)
    finally:
        page.close()
    assert any("policy violation on http://guard.test/: style-src-elem refused inline" in p for p in found), found
