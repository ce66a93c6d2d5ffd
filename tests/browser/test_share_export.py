"""Sharing a run by link (reopened read-only, then edited as a copy) and exporting the view
(SVG, PNG) and the document (JSON, Graphviz DOT)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import node_texts, open_saved_file, pick_node, run_code
from gradtrace.lessons import lesson
from pageguard import expect_http_error, wait_until

pytestmark = pytest.mark.browser


def _chain_rule(page: Any) -> dict[str, Any]:
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("chain_rule").title))).click()
    run_code(page)
    return dict(page.evaluate("window.gradtrace.app.doc"))


def test_share_gives_a_link_that_reopens_the_same_view_read_only(playground: Any, live_server: Any,
                                                                  artifacts_dir: Path) -> None:
    page = playground
    doc = _chain_rule(page)
    texts = node_texts(page)
    page.get_by_role("button", name="Share").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    url = page.get_by_label("Link").input_value()
    # The link carries the view (frontend/src/app/link.js): here the camera only.
    assert re.fullmatch(re.escape(live_server.url) + r"/s/[\w-]+(\?cam=[-\d.]+%2C[-\d.]+%2C[\d.]+)?", url), url
    page.get_by_role("button", name="Close").click()

    page.goto(url)
    wait_until(page, "Number(document.body.dataset.ready || 0) > 0")
    expect(page.get_by_text("Shared run · read-only")).to_be_visible()
    assert node_texts(page) == texts
    assert page.locator(".cm-content").get_attribute("contenteditable") == "false"
    assert page.evaluate("window.gradtrace.app.editor.code") == doc["code"]
    expect(page.get_by_role("button", name="Run")).to_be_hidden()
    page.screenshot(path=str(artifacts_dir / "share-read-only.png"))

    page.get_by_role("button", name="Edit a copy").click()
    expect(page.get_by_role("button", name="Run")).to_be_enabled()
    assert page.locator(".cm-content").get_attribute("contenteditable") == "true"
    assert page.evaluate("location.pathname") == "/"
    run_code(page)
    assert node_texts(page) == texts


def test_an_unknown_share_link_answers_not_found(page: Any, live_server: Any) -> None:
    expect_http_error(page, 404, "/s/doesnotexist0000")
    resp = page.goto(live_server.url + "/s/doesnotexist0000")
    assert resp is not None and resp.status == 404


def _download(page: Any, button: str, tmp_path: Path) -> bytes:
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name=button).click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path.read_bytes()


def test_exports_the_document_as_json_and_dot_and_the_view_as_svg_and_png(playground: Any,
                                                                          tmp_path: Path) -> None:
    page = playground
    doc = _chain_rule(page)
    assert json.loads(_download(page, "Document as JSON", tmp_path)) == doc

    dot = _download(page, "Graph as Graphviz DOT", tmp_path).decode()
    assert dot.startswith("digraph gradtrace {") and dot.rstrip().endswith("}")
    for e in doc["graph"]["edges"]:
        assert f'"{e["source"]}" -> "{e["target"]}"' in dot
    assert dot.count(", shape=") == len(doc["graph"]["nodes"])
    # Gradients on the edges, as the screen shows them at the end of the run.
    assert ' [label="∇ ' in dot

    svg = ET.fromstring(_download(page, "View as SVG", tmp_path))
    ns = "{http://www.w3.org/2000/svg}"
    labels = [t.text for t in svg.iter(ns + "text")]
    for name in ("MulBackward0", "AddBackward0", "AccumulateGrad", "x"):
        assert name in labels
    boxes = [r for r in svg.iter(ns + "rect") if (r.get("class") or "").startswith("node ")]
    assert len(boxes) >= len(doc["graph"]["nodes"])
    # Each text keeps to the width the page measured, so a wider font in the viewer cannot push
    # an edge's "∇ …" out of its background.
    group = next(g for g in svg.iter(ns + "g") if g.get("class") == "texts")
    kids = list(group)
    for i, t in enumerate(kids):
        if t.tag != ns + "text":
            continue
        assert t.get("lengthAdjust") == "spacingAndGlyphs" and float(t.get("textLength") or 0) > 0, t.attrib
        bg = kids[i - 1] if i and kids[i - 1].tag == ns + "rect" else None
        if bg is not None:
            right = float(t.get("x")) + float(t.get("textLength"))
            assert right <= float(bg.get("x")) + float(bg.get("width")) + 0.2, (t.text, t.attrib, bg.attrib)

    png = _download(page, "View as PNG", tmp_path)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
    # 2× by default (sharp on slides): twice the drawing's px, the SVG's size, each way.
    drawing = page.evaluate("window.gradtrace.app.sharer.lastExport")
    width, height = _png_size(png)
    assert drawing["scale"] == 2 and width >= 2 * drawing["W"] and height >= 2 * drawing["H"], (width, height, drawing)
    assert width % 2 == 0 and height % 2 == 0
    svg_size = (float(svg.get("width")), float(svg.get("height")))
    assert (width, height) == (2 * svg_size[0], 2 * svg_size[1]), ((width, height), svg_size)
    # The menu's size choice: 1× and 3×.
    for scale in (1, 3):
        page.get_by_text("Export", exact=True).click()
        page.get_by_label("PNG size").select_option(f"{scale}×")
        page.get_by_text("Export", exact=True).click()  # closed again: _download opens it
        assert _png_size(_download(page, "View as PNG", tmp_path)) == (scale * svg_size[0], scale * svg_size[1])



def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _view(page: Any, viewer: str) -> dict[str, Any]:
    """The step, the selected node's id and the camera (the world point at the view's centre,
    and the zoom) of the viewer at ``viewer`` (app/viewer.js)."""
    return dict(page.evaluate(f"""() => {{ const v = {viewer}, sel = v.selectedV, c = v.canvas, size = c._size();
      return {{ step: v.player.k, sel: sel >= 0 ? v.model.index.nodes[v.scene.view.vnodes[sel].refs[0]].id : null,
               centre: [c.cam.x + size.w / 2 / c.cam.k, c.cam.y + size.h / 2 / c.cam.k], k: c.cam.k }}; }}"""))


def test_a_saved_html_file_opens_at_the_step_selection_and_camera_it_was_saved_with(
        playground: Any, browser: Any, tmp_path: Path, artifacts_dir: Path) -> None:
    page = playground
    _chain_rule(page)
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    pick_node(page, re.compile(r"^MulBackward0"))
    wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
    page.get_by_role("button", name="Zoom in").click()
    page.evaluate("""() => new Promise((resolve) => {  // the zoom's animation has ended
        const c = window.gradtrace.app.canvas; let last = '', same = 0;
        const tick = () => { const now = JSON.stringify(c.cam); same = now === last ? same + 1 : 0; last = now;
            if (same >= 3) resolve(); else requestAnimationFrame(tick); };
        tick(); })""")
    before = _view(page, "window.gradtrace.app.viewer")
    assert before["sel"] is not None and before["step"] == 4, before
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name=re.compile("Run as HTML")).click()
    path = tmp_path / "saved.html"
    info.value.save_as(path)
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 800}) as opened:
        after = _view(opened.page, "window.gradtrace.viewer.viewer")
        opened.page.screenshot(path=str(artifacts_dir / "saved-file-selection.png"))
        assert (after["step"], after["sel"]) == (before["step"], before["sel"]), (after, before)
        assert "MulBackward0" in opened.page.locator("#gradtrace #inspector").inner_text()
        assert abs(after["k"] - before["k"]) < 0.01 * before["k"], (after, before)
        assert all(abs(a - b) <= 2 for a, b in zip(after["centre"], before["centre"], strict=True)), (after, before)
