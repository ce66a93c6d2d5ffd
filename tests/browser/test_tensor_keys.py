"""A node selected before the run's tensor index has arrived: each tensor it shows is read with
one request, by its key (``GET /api/runs/{id}/tensors/{key}``), not the index and then a Range
in a row; once the index is in, looks read by Range again (NOTE [tensor sources] in
frontend/src/tensors/source.js, NOTE [one round trip for the first look] in
backend/gradtrace/api/tensor_keys.py). The index is held back here by the browser itself, so
"before it arrived" is a fact of the test, not a race. Screenshot:
tests/artifacts/tensors-by-key-attention.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.test_tensor_service import ATTENTION, _stored_attention_run, hover_reads_the_stored_elements
from pageguard import expect_http_error, wait_until

pytestmark = pytest.mark.browser

SOURCE = "window.gradtrace.app.tensors(window.gradtrace.app.doc)"
SELECT = """(pick) => { const app = window.gradtrace.app, nodes = app.index.nodes;
    const i = nodes.findIndex((n, j) => pick === null
      ? n.kind === 'function' && n.name !== 'SoftmaxBackward0' && (n.output || []).some((o) => o && o.key)
        && app.scene.view.vnodes.some((v) => v.refs && v.refs.length === 1 && v.refs[0] === j)
      : n.name === pick);
    app.viewer.selectNode(app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i));
    return nodes[i].name; }"""
FIRST = "#inspector [data-gt=tensor][data-key]:not([data-key=''])"


def test_a_look_before_the_index_reads_each_tensor_by_key_in_one_request(page: Any, live_server: Any,
                                                                        frontend_bundle: Path,
                                                                        artifacts_dir: Path) -> None:
    assert "softmax" in ATTENTION
    run_id, data = _stored_attention_run(live_server)
    held: list[Any] = []
    page.route(re.compile(r".*/api/runs/[0-9a-f]+/tensors$"), lambda route: held.append(route))
    asked: list[tuple[str, str | None]] = []
    page.on("request", lambda r: asked.append((r.url, r.headers.get("range"))) if "/tensors" in r.url else None)
    page.goto(f"{live_server.url}/r/{run_id}")
    wait_until(page, "window.gradtrace && window.gradtrace.app.scene && document.body.dataset.ready")
    assert not page.evaluate(f"{SOURCE}.indexed")
    page.evaluate(SELECT, "SoftmaxBackward0")
    grad = page.locator("#inspector [data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
    expect(grad).to_have_attribute("data-ready", "1")
    wait_until(page, "document.querySelectorAll('#inspector [data-gt=tensor][data-ready]').length >= 3")
    base = f"{live_server.url}/api/runs/{run_id}"
    by_key = [u for u, _ in asked if u.startswith(f"{base}/tensors/")]
    assert not page.evaluate(f"{SOURCE}.indexed"), "the index came through"
    assert not [u for u, _ in asked if u.endswith(".safetensors")], asked  # no Range: no index to place it
    # one request per tensor shown (the output, the gradient in, the gradient out), each by its key
    assert len(by_key) == len(set(by_key)) == 3, by_key
    key = grad.get_attribute("data-key") or ""
    assert f"{base}/tensors/{key}" in by_key
    from safetensors.numpy import load

    stored = load(data)[key]
    assert stored.shape == (2, 2, 16, 16)
    hover_reads_the_stored_elements(grad, page, stored)
    page.screenshot(path=str(artifacts_dir / "tensors-by-key-attention.png"))

    # a key the file does not hold: the service's own words reach the page
    expect_http_error(page, 404, f"/api/runs/{run_id}/tensors/n99999.out0")
    message = page.evaluate(f"{SOURCE}.read('n99999.out0').then(() => 'read', (e) => e.message)")
    assert message.startswith(f"run {run_id!r} has no tensor 'n99999.out0' in its tensor file"), message

    # the index arrives: the next look reads by Range, one request per tensor
    assert len(held) == 1, "the index was asked for more than once"
    held[0].continue_()
    wait_until(page, f"{SOURCE}.indexed")
    before = len(asked)
    name = page.evaluate(SELECT, None)
    expect(page.locator("#inspector h3")).to_contain_text(name.removesuffix("Backward0"))
    expect(page.locator(FIRST).first).to_have_attribute("data-ready", "1")
    later = asked[before:]
    assert later and all(u == f"{base}/tensors.safetensors" and r and r.startswith("bytes=") for u, r in later), later
