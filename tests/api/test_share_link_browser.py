"""The share link end to end in Chromium: made from the page, opened in a fresh browser
context (no shared storage or cache), it shows the same graph, and still does after the
service restarts on the same data.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from gradtrace.frontend import DIST
from playwright.sync_api import expect

from browser.pageutil import node_texts, run_code, wait_drawn
from conftest import launch_server, stop_server
from pageguard import wait_until

pytestmark = pytest.mark.browser

SNIPPET = ("a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
           "b = (a * a).sum() + a.exp().sum()\nb.backward()\n")


def _open_in_fresh_context(browser: Any, url: str) -> tuple[list[str], str]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        response = page.goto(url)
        assert response is not None and response.status == 200
        wait_drawn(page, 0)
        embedded = page.locator("#gt-document").text_content() or ""
        texts = node_texts(page)
        assert errors == [], errors
        return texts, embedded
    finally:
        context.close()


def test_a_link_made_in_the_page_shows_the_same_graph_in_a_new_context_even_after_a_restart(
        browser: Any, tmp_path: Any) -> None:
    if not (DIST / "app.js").exists():
        pytest.fail("frontend/dist is not built: run `make frontend` (npm ci && npm run build)")
    server = launch_server(data_dir=tmp_path / "data")
    try:
        author = browser.new_context(viewport={"width": 1280, "height": 800})
        page = author.new_page()
        page.goto(server.url + "/")
        wait_until(page, "window.gradtrace !== undefined")
        run_code(page, SNIPPET)
        texts = node_texts(page)
        assert texts, "the run drew a graph"
        page.get_by_role("button", name="Share").click()
        link = page.get_by_label("Link")
        # the link may carry the view (camera, step) after the share id
        expect(link).to_have_value(re.compile(re.escape(server.url) + r"/s/[0-9a-f]{8,}(\?.*)?$"))
        url = link.input_value()
        author.close()

        seen, embedded = _open_in_fresh_context(browser, url)
        assert seen == texts
        share_id = url.rsplit("/", 1)[-1]
        stored = httpx.get(f"{server.url}/api/shares/{share_id}", timeout=30).json()
        assert json.loads(embedded) == stored and stored["code"] == SNIPPET
    finally:
        stop_server(server)

    again = launch_server(data_dir=server.data_dir, port=server.port)
    try:
        seen_after, _ = _open_in_fresh_context(browser, url)
        assert seen_after == texts
    finally:
        stop_server(again)
