"""The inspector's tensors on the playground: a run through the real service and sandbox, its
tensor file read one request per tensor when a node is selected, never before (the page's
first frame makes no request to the tensor file; the index alone is asked for once the graph is
drawn, NOTE [tensor sources] in frontend/src/tensors/source.js): a Range request on the file
once the index has arrived, the tensor by its key before (NOTE [one round trip for the first
look] in backend/gradtrace/api/tensor_keys.py), and the hovered number exactly the one in the
file the service stores (read here with ``safetensors.numpy``).
Screenshot: tests/artifacts/tensors-service-attention.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from playwright.sync_api import expect

from browser.pageutil import run_code
from pageguard import wait_until

pytestmark = pytest.mark.browser

ATTENTION = """import torch
import torch.nn.functional as F
torch.manual_seed(0)
B, H, T, D, vocab = 2, 2, 16, 4, 11
emb = torch.nn.Embedding(vocab, H * D)
qkv = torch.nn.Linear(H * D, 3 * H * D)
tokens = torch.randint(0, vocab, (B, T))
q, k, v = qkv(emb(tokens)).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
att = (q @ k.transpose(-2, -1) / D ** 0.5).softmax(-1)
y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
F.cross_entropy((y @ emb.weight.t()).reshape(-1, vocab), tokens.reshape(-1)).backward()
"""


FIRST_FRAME_AT = """() => { window.__firstFrameAt = null;
    new MutationObserver((_, obs) => { window.__firstFrameAt = performance.now(); obs.disconnect(); })
      .observe(document.body, { attributes: true, attributeFilter: ["data-ready"] }); }"""
INDEX_ASKED_AT = """() => performance.getEntriesByType('resource').filter((e) => /\\/tensors$/.test(e.name))
    .map((e) => e.startTime)"""


def test_the_first_frame_asks_nothing_of_the_tensor_file(playground: Any) -> None:
    """Run, draw, step through the whole run: no byte of the tensor file is asked for until a
    node is inspected, and its index only once the first frame is drawn (in idle time), once."""
    page = playground
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/tensors" in r.url else None)
    page.evaluate(FIRST_FRAME_AT)
    run_code(page, ATTENTION)
    assert page.evaluate("window.gradtrace.app.doc.tensors") is not None, "the service kept no tensor file"
    page.evaluate("window.gradtrace.app.player.go(0)")
    page.evaluate("window.gradtrace.app.player.go(window.gradtrace.app.timeline.N)")
    wait_until(page, "window.gradtrace.app.player.k === window.gradtrace.app.timeline.N")
    wait_until(page, f"({INDEX_ASKED_AT})().length > 0")
    first_frame_at = page.evaluate("window.__firstFrameAt")
    assert first_frame_at is not None
    assert all(t >= first_frame_at for t in page.evaluate(INDEX_ASKED_AT)), "the index was asked before the first frame"
    assert [u for u in asked if u.endswith("/tensors")] == [asked[0]] and len(asked) == 1, asked


INDEXED = "window.gradtrace.app.tensors(window.gradtrace.app.doc).indexed"
"""The page's source has the run's index: a look reads by Range from now on."""


def _tensor_reads(asked: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """The requests for a tensor's bytes: Range reads of the file, and reads by key."""
    return [(u, r) for u, r in asked if u.endswith("/tensors.safetensors") or "/tensors/" in u]


def test_tensors_are_fetched_by_range_only_when_looked_at(playground: Any, live_server: Any,
                                                           artifacts_dir: Path) -> None:
    page = playground
    asked: list[tuple[str, str | None]] = []
    page.on("request", lambda r: asked.append((r.url, r.headers.get("range"))) if "/tensors" in r.url else None)
    run_code(page, ATTENTION)
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc.get("tensors"), "the service kept no tensor file"
    # the first frame (and everything up to now) asked no byte of the tensor file
    assert not _tensor_reads(asked), asked
    wait_until(page, INDEXED)  # asked for in idle time: the looks below read by Range
    node = page.evaluate("""() => { const app = window.gradtrace.app, nodes = app.index.nodes;
        const i = nodes.findIndex(n => n.name === 'SoftmaxBackward0');
        app.viewer.selectNode(app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i));
        return nodes[i]; }""")
    grad = page.locator("#inspector [data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
    expect(grad).to_have_attribute("data-ready", "1")
    key = grad.get_attribute("data-key")
    wait_until(page, "document.querySelectorAll('#inspector [data-gt=tensor][data-ready]').length >= 3")
    base = f"{live_server.url}/api/runs/{doc['id']}"
    index_calls = [u for u, _ in asked if u.endswith("/tensors")]
    file_calls = [(u, r) for u, r in asked if u.endswith("/tensors.safetensors")]
    assert index_calls == [f"{base}/tensors"], asked
    # one Range request per tensor shown: the output, the gradient in, the gradient out
    assert len(file_calls) == 3 and all(r and r.startswith("bytes=") for _, r in file_calls), file_calls
    data = httpx.get(f"{base}/tensors.safetensors", timeout=30).content
    from safetensors.numpy import load

    stored = load(data)[key]
    assert stored.shape == (2, 2, 16, 16) and stored.dtype == np.float32
    assert key in {g.get("key") for e in doc["events"] for g in (e.get("grad_outputs") or []) if g}
    picks = grad.locator("[data-gt=tensor-slice] select")
    picks.nth(0).select_option("1")
    canvas = grad.locator("[data-gt=tensor-heatmap]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    hover = grad.locator("[data-gt=tensor-hover]")
    for r, c in [(2, 11), (9, 4)]:
        page.mouse.move(box["x"] + (c + 0.5) * box["width"] / 16, box["y"] + (r + 0.5) * box["height"] / 16)
        expect(hover).to_have_attribute("data-index", f"1,0,{r},{c}")
        assert np.float32(hover.get_attribute("data-value")) == stored[1, 0, r, c]
    # looked at again (another step, the same node): nothing fetched twice
    before = len(asked)
    page.evaluate("window.gradtrace.app.viewer.selectNode(-1)")
    page.evaluate("""(id) => { const app = window.gradtrace.app, i = app.index.idx.get(id);
        app.viewer.selectNode(app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i));
        }""", node["id"])
    again = page.locator("#inspector [data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
    expect(again).to_have_attribute("data-ready", "1")
    assert len(asked) == before, asked[before:]
    page.screenshot(path=str(artifacts_dir / "tensors-service-attention.png"))


def _stored_attention_run(server: Any) -> tuple[str, bytes]:
    """The attention program recorded in process, its document and tensor file stored on the
    live server's own database in the one call the run path makes (``put_run``; as
    tests/api/tensor_runs.py does)."""
    import gradtrace
    from api.tensor_runs import server_store
    from gradtrace.storage.codec import encode

    namespace: dict[str, Any] = {}
    with gradtrace.record() as rec:
        exec(compile(ATTENTION, "<snippet>", "exec"), namespace)
    doc = rec.document()
    data = doc.tensor_bytes()
    assert data is not None
    body = doc.as_json_dict()
    body["code"] = ATTENTION
    encoded = encode(body)  # its id: the hash of what is stored
    with server_store(server) as store:
        store.put_run(encoded, data)
    return encoded.doc_id, data


def hover_reads_the_stored_elements(grad: Any, page: Any, stored: Any) -> None:
    """On the (2, 2, 16, 16) attention gradient's heatmap, slice 1 picked: hovering two
    elements reads each one's exact stored number (what ``safetensors`` reads from the file)."""
    grad.locator("[data-gt=tensor-slice] select").nth(0).select_option("1")
    canvas = grad.locator("[data-gt=tensor-heatmap]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    hover = grad.locator("[data-gt=tensor-hover]")
    for r, c in [(2, 11), (9, 4)]:
        page.mouse.move(box["x"] + (c + 0.5) * box["width"] / 16, box["y"] + (r + 0.5) * box["height"] / 16)
        expect(hover).to_have_attribute("data-index", f"1,0,{r},{c}")
        assert np.float32(hover.get_attribute("data-value")) == stored[1, 0, r, c]


def test_a_stored_runs_page_reads_each_tensor_by_one_range_request(page: Any, live_server: Any,
                                                                    frontend_bundle: Path,
                                                                    artifacts_dir: Path) -> None:
    run_id, data = _stored_attention_run(live_server)
    asked: list[tuple[str, str | None]] = []
    page.on("request", lambda r: asked.append((r.url, r.headers.get("range")))
            if "/tensors" in r.url else None)
    page.goto(f"{live_server.url}/r/{run_id}")
    wait_until(page, "window.gradtrace && window.gradtrace.app.scene")
    assert not _tensor_reads(asked), asked  # no byte before a look
    wait_until(page, INDEXED)
    page.evaluate("""() => { const app = window.gradtrace.app, nodes = app.index.nodes;
        const i = nodes.findIndex(n => n.name === 'SoftmaxBackward0');
        app.viewer.selectNode(app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i));
        }""")
    grad = page.locator("#inspector [data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
    expect(grad).to_have_attribute("data-ready", "1")
    wait_until(page, "document.querySelectorAll('#inspector [data-gt=tensor][data-ready]').length >= 3")
    base = f"{live_server.url}/api/runs/{run_id}"
    assert [u for u, _ in asked if u.endswith("/tensors")] == [f"{base}/tensors"], asked
    file_calls = [(u, r) for u, r in asked if u.endswith("/tensors.safetensors")]
    assert len(file_calls) == 3 and all(r and r.startswith("bytes=") for _, r in file_calls), file_calls
    from safetensors.numpy import load

    stored = load(data)[grad.get_attribute("data-key") or ""]
    assert stored.shape == (2, 2, 16, 16)
    hover_reads_the_stored_elements(grad, page, stored)
    assert float(grad.get_attribute("data-ms") or "nan") >= 0
    page.screenshot(path=str(artifacts_dir / "tensors-service-attention.png"))


RANGES_DONE = "performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/tensors.safetensors')).length"


def test_pointing_at_a_node_fetches_its_tensors_before_the_click(page: Any, live_server: Any,
                                                                   frontend_bundle: Path) -> None:
    """NOTE [fetched on hover] in frontend/src/ui/tensors.js: the pointer resting on a node asks
    for the tensors its selection shows, one Range request each, before any click; the click
    then draws them from those answers and asks for nothing more; the bytes are the stored ones."""
    run_id, data = _stored_attention_run(live_server)
    asked: list[tuple[str, str | None]] = []
    page.on("request", lambda r: asked.append((r.url, r.headers.get("range")))
            if r.url.endswith("/tensors.safetensors") else None)
    page.goto(f"{live_server.url}/r/{run_id}")
    wait_until(page, "window.gradtrace && window.gradtrace.app.scene && document.body.dataset.ready")
    assert not asked, asked  # nothing yet
    x, y = page.evaluate("""async () => {
        const app = window.gradtrace.app, c = app.canvas, s = app.scene, nodes = app.index.nodes;
        const i = nodes.findIndex(n => n.name === 'SoftmaxBackward0');
        const v = s.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i);
        c.centerOn(v);
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (s.x[v] - c.cam.x) * c.cam.k, r.top + (s.y[v] - c.cam.y) * c.cam.k]; }""")
    page.mouse.move(x - 3, y)
    page.mouse.move(x, y)
    wait_until(page, f"{RANGES_DONE} >= 3")  # the output, the gradient in, the gradient out
    assert page.locator("#inspector [data-gt=tensor]").count() == 0, "hovering selected the node"
    page.mouse.click(x, y)
    expect(page.locator("#inspector h3")).to_contain_text("Softmax")
    grad = page.locator("#inspector [data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
    expect(grad).to_have_attribute("data-ready", "1")
    wait_until(page, "document.querySelectorAll('#inspector [data-gt=tensor][data-ready]').length >= 3")
    assert len(asked) == 3 and all(r and r.startswith("bytes=") for _, r in asked), asked
    from safetensors.numpy import load

    stored = load(data)[grad.get_attribute("data-key") or ""]
    grad.locator("[data-gt=tensor-slice] select").nth(0).select_option("1")
    canvas = grad.locator("[data-gt=tensor-heatmap]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    hover = grad.locator("[data-gt=tensor-hover]")
    page.mouse.move(box["x"] + 11.5 * box["width"] / 16, box["y"] + 2.5 * box["height"] / 16)
    expect(hover).to_have_attribute("data-index", "1,0,2,11")
    assert np.float32(hover.get_attribute("data-value")) == stored[1, 0, 2, 11]
