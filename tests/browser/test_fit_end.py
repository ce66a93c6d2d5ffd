"""Fit at the end of a run, and presentation mode in a small window: the whole of a small graph
stays in view while the page's own text changes around it (render/fit.js, NOTE [fit follows the
view's size] in render/canvas.js), and the header and the sentence leave the graph most of the
height (static/app.css, NOTE [presentation mode])."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser.pageutil import run_example, settled
from pageguard import wait_until

# Every revealed node's box on screen, against the canvas.
BOXES = """() => { const c = window.gradtrace.app.canvas, s = c.scene, cam = c.cam;
    const W = c.overlay.clientWidth, H = c.overlay.clientHeight, out = [];
    s.view.vnodes.forEach((n, v) => { if (!(s.reveal[v] <= c.k)) return;
      out.push({ label: n.label, x0: (s.x[v] - n.w / 2 - cam.x) * cam.k, x1: (s.x[v] + n.w / 2 - cam.x) * cam.k,
                 y0: (s.y[v] - n.h / 2 - cam.y) * cam.k, y1: (s.y[v] + n.h / 2 - cam.y) * cam.k }); });
    return { W, H, k: cam.k, boxes: out }; }"""


def _outside(m: dict[str, Any]) -> list[str]:
    return [b["label"] for b in m["boxes"] if b["x0"] < 0 or b["y0"] < 0 or b["x1"] > m["W"] or b["y1"] > m["H"]]


def _end(page: Any) -> None:
    page.locator("#graph").focus()
    page.keyboard.press("End")
    wait_until(page, "window.gradtrace.app.player.k === window.gradtrace.app.timeline.N")
    settled(page)


def test_lesson_1_at_the_end_shows_its_output(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "chain_rule")
    _end(page)
    m = page.evaluate(BOXES)
    assert not _outside(m), (_outside(m), m)
    # "Step 10/10 · backward 1" is one line (the speed control does not push it to wrap)
    label = page.locator(".gt-step-label")
    assert label.evaluate("e => e.getClientRects().length === 1 && e.offsetHeight < 24"), label.inner_text()
    page.screenshot(path=str(artifacts_dir / "fit-end-lesson1.png"))


def test_present_mode_at_900x700_keeps_the_graph_most_of_the_height(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    page.set_viewport_size({"width": 900, "height": 700})
    run_example(page, "chain_rule")
    page.get_by_role("button", name="Present").click()
    wait_until(page, "document.body.dataset.present !== undefined")
    _end(page)
    settled(page)
    header = page.locator(".gt-header").bounding_box()
    assert header and header["height"] <= 48, f"the header wraps: {header}"
    graph = page.locator("#graph").bounding_box()
    assert graph and graph["height"] >= 0.6 * 700, f"the graph is {graph} of a 700 px window"
    sentence = page.locator("#sentence").bounding_box()
    assert sentence and sentence["height"] <= 0.12 * 700, sentence
    m = page.evaluate(BOXES)
    assert not _outside(m), (_outside(m), m)  # lesson 1 whole, its output included
    page.screenshot(path=str(artifacts_dir / "present-900x700-lesson1.png"))
