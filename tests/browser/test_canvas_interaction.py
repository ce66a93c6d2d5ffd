"""Using the graph canvas with the mouse: click a node to inspect it (which pauses playback),
click a module's title to collapse it, double-click a collapsed module to open it, drag the
minimap, scrub the timeline, and switch the layout direction."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import node_texts, run_example
from pageguard import wait_until

pytestmark = pytest.mark.browser


def _screen_of(page: Any, label: str) -> tuple[float, float]:
    """Page coordinates of the centre of the first visible node with this label."""
    x, y = page.evaluate("""(label) => {
        const c = window.gradtrace.app.canvas, s = c.scene;
        const v = s.view.vnodes.findIndex(n => n.label === label);
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (s.x[v] - c.cam.x) * c.cam.k, r.top + (s.y[v] - c.cam.y) * c.cam.k]; }""", label)
    return float(x), float(y)


def test_clicking_a_node_on_the_canvas_inspects_it_and_pauses(playground: Any) -> None:
    page = playground
    doc = run_example(page, "loop")
    n = len(doc["events"])
    page.get_by_role("button", name="Fit").click()
    page.get_by_label("Speed").select_option("0.5")
    page.locator("#graph").focus()
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    page.get_by_role("button", name="Play").click()
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    x, y = _screen_of(page, "x")
    page.mouse.click(x, y)
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    expect(page.locator("#inspector h3")).to_have_text("x")
    k = page.evaluate("window.gradtrace.app.player.k")
    page.wait_for_timeout(700)
    assert page.evaluate("window.gradtrace.app.player.k") == k < n


def test_module_title_click_collapses_and_double_click_expands(playground: Any) -> None:
    page = playground
    run_example(page, "mlp_loss")
    page.get_by_role("button", name="Fit").click()
    before = len(node_texts(page))
    lx, ly = page.evaluate("""() => {
        const c = window.gradtrace.app.canvas, b = c.scene.boxes.find(b => b.path === 'model.2');
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (b.lx + 10 - c.cam.x) * c.cam.k, r.top + (b.ly + 5 - c.cam.y) * c.cam.k]; }""")
    page.mouse.click(lx, ly)
    wait_until(page, f"document.querySelectorAll('#node-list li').length < {before}")
    assert "model.2" in [t.split(" — ")[0] for t in node_texts(page)]
    x, y = _screen_of(page, "model.2")
    page.mouse.dblclick(x, y)
    wait_until(page, f"document.querySelectorAll('#node-list li').length === {before}")


def test_dragging_the_minimap_moves_the_view(playground: Any) -> None:
    page = playground
    run_example(page, "recursion_tree")
    minimap = page.locator(".gt-minimap")
    expect(minimap).to_be_visible()
    page.get_by_role("button", name="Zoom in").click()
    box = minimap.bounding_box()
    assert box
    cam0 = page.evaluate("({...window.gradtrace.app.canvas.cam})")
    page.mouse.move(box["x"] + 10, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 10, box["y"] + box["height"] / 2, steps=4)
    page.mouse.up()
    cam1 = page.evaluate("({...window.gradtrace.app.canvas.cam})")
    assert cam1["x"] > cam0["x"] and cam1["k"] == cam0["k"]


def test_scrubber_and_phase_segments_move_the_step(playground: Any) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    n = len(doc["events"])
    page.get_by_label("Timeline position").fill("3")
    expect(page.locator("#tl-label")).to_have_text(f"Step 3/{n} · forward")
    page.get_by_role("button", name=re.compile("^Jump to backward 1")).click()
    first_backward = next(i for i, e in enumerate(doc["events"]) if e["phase"] == "backward") + 1
    expect(page.locator("#tl-label")).to_have_text(f"Step {first_backward}/{n} · backward 1")  # passes count from 1


def test_left_to_right_layout_puts_producers_left_of_consumers(playground: Any) -> None:
    page = playground
    run_example(page, "chain_rule")
    page.get_by_label("Layout").select_option("LR")
    wait_until(page, "window.gradtrace.app.scene.layout.direction === 'LR'")
    ok = page.evaluate("""() => { const s = window.gradtrace.app.scene;
        return s.view.vedges.every(e => s.x[e.t] > s.x[e.s]); }""")
    assert ok
