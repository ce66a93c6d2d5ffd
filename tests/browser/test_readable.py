"""Readable at any size: real programs (an unrolled GRUCell, an Adam training loop, a 6-layer
transformer, every lesson) at Fit, at 1440×900 and 900×700, in Chromium.

The canvas's ``fillText`` is instrumented: each text drawn is recorded with its font size and
its box on screen (from ``measureText`` and the current transform). At Fit no text may be
smaller than 9 px, no two text boxes may intersect, and none may stick out of the canvas.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import pick_node, run_code, settled
from gradtrace.lessons import all_lessons, lesson
from pageguard import wait_until
from programs import ADAM_20, GRU_200, TRANSFORMER_6

pytestmark = pytest.mark.browser

GRU, ADAM, TRANSFORMER = GRU_200, ADAM_20, TRANSFORMER_6

# Records every fillText on the graph's base canvas: text, font size in CSS px, screen box.
INSTRUMENT = """() => {
  const base = document.querySelector('#graph canvas.gt-base');
  const proto = CanvasRenderingContext2D.prototype;
  if (!proto.__gtOrig) proto.__gtOrig = proto.fillText;
  window.__texts = [];
  proto.fillText = function (text, x, y, maxWidth) {
    if (this.canvas === base) {
      const m = this.getTransform();
      const dpr = window.gradtrace.app.canvas.dpr;
      const scale = Math.hypot(m.a, m.b) / dpr;
      const px = parseFloat(/([\\d.]+)px/.exec(this.font)[1]) * scale;
      const mt = this.measureText(text);
      let w = mt.width * scale;
      if (maxWidth !== undefined) w = Math.min(w, maxWidth * scale);
      const sx = (m.a * x + m.c * y + m.e) / dpr, sy = (m.b * x + m.d * y + m.f) / dpr;
      const right = this.textAlign === 'right' || this.textAlign === 'end';
      const left = this.textAlign === 'center' ? sx - w / 2 : right ? sx - w : sx;
      const asc = mt.actualBoundingBoxAscent * scale, desc = mt.actualBoundingBoxDescent * scale;
      window.__texts.push({ text: String(text), px, x: left, y: sy - asc, w, h: asc + desc });
    }
    return proto.__gtOrig.call(this, text, x, y, maxWidth);
  };
}"""

DRAW = """() => { window.__texts = []; window.gradtrace.app.canvas.drawNow(); return window.__texts; }"""


def _check_texts(page: Any, what: str) -> list[dict[str, Any]]:
    texts = page.evaluate(DRAW)
    assert texts, f"{what}: nothing was written on the canvas"
    smallest = min(t["px"] for t in texts)
    assert smallest >= 9, f"{what}: text drawn at {smallest:.1f} px: {[t['text'] for t in texts if t['px'] < 9][:5]}"
    w, h = page.evaluate("(() => { const g = document.querySelector('#graph'); "
                         "return [g.clientWidth, g.clientHeight]; })()")
    for t in texts:
        assert t["x"] >= -0.5 and t["y"] >= -0.5 and t["x"] + t["w"] <= w + 0.5 and t["y"] + t["h"] <= h + 0.5, (
            f"{what}: {t['text']!r} sticks out of the {w}×{h} canvas at ({t['x']:.0f}, {t['y']:.0f})")
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            overlap = (a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5
                       and a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5)
            assert not overlap, f"{what}: {a['text']!r} and {b['text']!r} overlap"
    return texts


def _shown(page: Any) -> list[str]:
    """Labels of the visible graph's boxes (drawn or scrolled out of view)."""
    return list(page.evaluate("window.gradtrace.app.scene.view.vnodes.map(v => v.label)"))


def _titles(page: Any) -> list[str]:
    return list(page.evaluate("window.gradtrace.app.scene.boxes.map(b => b.title || b.path)"))


def _fit(page: Any) -> None:
    page.get_by_role("button", name="Fit").click()


@pytest.fixture(params=[(1440, 900), (900, 700)], ids=["1440x900", "900x700"])
def sized(request: Any, playground: Any) -> Any:
    page = playground
    page.set_viewport_size({"width": request.param[0], "height": request.param[1]})
    page.evaluate(INSTRUMENT)
    settled(page)
    page.size_id = f"{request.param[0]}x{request.param[1]}"
    return page


def test_gru_200_calls_fold_around_the_open_call(sized: Any, artifacts_dir: Path) -> None:
    page = sized
    run_code(page, GRU)
    picker = page.get_by_role("group", name="Iteration")
    expect(picker).to_be_visible()
    expect(picker).to_contain_text("of 200")
    page.screenshot(path=str(artifacts_dir / f"readable-gru-fit-{page.size_id}.png"))
    _check_texts(page, "GRU at Fit")
    assert "calls 2–200 of cell" in _shown(page)
    assert "▾ cell call 1 of 200" in _titles(page)
    assert page.evaluate("window.gradtrace.app.scene.view.vnodes.length") < 80
    expect(page.locator(".gt-minimap")).to_be_visible()
    # The picker moves the transport, and the open call follows it.
    page.get_by_role("spinbutton", name="cell call number").fill("37")
    page.get_by_role("spinbutton", name="cell call number").press("Enter")
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 36")
    settled(page)
    _check_texts(page, "GRU call 37")
    assert "▾ cell call 37 of 200" in _titles(page)
    assert {"calls 1–36 of cell", "calls 38–200 of cell"} <= set(_shown(page))
    page.screenshot(path=str(artifacts_dir / f"readable-gru-call37-{page.size_id}.png"))
    # Stepping forward through the call keeps every label legible.
    page.locator("#graph").focus()
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    settled(page)
    _check_texts(page, "GRU stepping")
    page.screenshot(path=str(artifacts_dir / f"readable-gru-step-{page.size_id}.png"))


def test_adam_loop_shows_one_iteration_and_folds_the_others(sized: Any, artifacts_dir: Path) -> None:
    page = sized
    run_code(page, ADAM)
    expect(page.get_by_role("group", name="Iteration")).to_contain_text("of 20")
    page.screenshot(path=str(artifacts_dir / f"readable-adam-fit-{page.size_id}.png"))
    _check_texts(page, "Adam at Fit")
    assert "iterations 1–19" in _shown(page)
    page.get_by_role("button", name="Previous iteration").click()
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 18")
    settled(page)
    _fit(page)
    _check_texts(page, "Adam iteration 19")
    assert {"iterations 1–18", "iteration 20 of 20"} <= set(_shown(page))
    k = page.evaluate("window.gradtrace.app.player.k")
    page.locator("#graph").focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    settled(page)
    assert page.evaluate("window.gradtrace.app.player.k") == k + 4
    _check_texts(page, "Adam stepping through the backward pass")
    page.screenshot(path=str(artifacts_dir / f"readable-adam-step-{page.size_id}.png"))
    # Folds open one level at a time, by a click: the run shows its iterations, one of
    # those shows its nodes. The opened set lives in the view state (search opens groups there).
    _click_box(page, "iterations 1–18")
    wait_until(page, "window.gradtrace.app.scene.view.vnodes.some(v => v.label === 'iteration 5 of 20')")
    assert "iterations 1–18" not in _shown(page)
    assert page.evaluate("[...window.gradtrace.app.viewer.state.get('open')]") == ["units:0"]
    before = len(_shown(page))
    _click_box(page, "iteration 5 of 20")
    wait_until(page, f"window.gradtrace.app.scene.view.vnodes.length > {before}")
    assert "▾ iteration 5 of 20" in _titles(page) and "iteration 5 of 20" not in _shown(page)
    # A fold chosen from the keyboard's node list is summed up in the inspector; Enter opens it.
    pick_node(page, re.compile("^iteration 6 of 20"))
    expect(page.locator("#inspector")).to_contain_text("folded")
    page.locator("#inspector").get_by_role("button", name="Expand it").press("Enter")
    wait_until(page, "window.gradtrace.app.scene.boxes.some(b => b.title === '▾ iteration 6 of 20')")


def _click_box(page: Any, label: str) -> None:
    """Centre the view on the visible box with this label and click it, as a person would."""
    x, y = page.evaluate("""(label) => {
        const c = window.gradtrace.app.canvas, s = c.scene;
        const v = s.view.vnodes.findIndex(n => n.label === label);
        c.centerOn(v); c.drawNow();
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (s.x[v] - c.cam.x) * c.cam.k, r.top + (s.y[v] - c.cam.y) * c.cam.k]; }""", label)
    page.mouse.click(x, y)


def test_transformer_6_layers_at_fit_and_merged_edges_sum(sized: Any, artifacts_dir: Path) -> None:
    page = sized
    run_code(page, TRANSFORMER)
    _fit(page)
    _check_texts(page, "transformer at Fit")
    page.screenshot(path=str(artifacts_dir / f"readable-transformer-fit-{page.size_id}.png"))
    # The layer active at the step is open (its attention and feed-forward as module boxes),
    # the other five folded on both sides of it, with the output below.
    assert "TransformerEncoderLayer 2–6 of 6" in _shown(page)
    assert "output" in _shown(page)
    titles = _titles(page)
    assert "▾ enc.layers.0 · TransformerEncoderLayer 1 of 6" in titles
    assert {"enc.layers.0.self_attn", "enc.layers.0.linear1", "enc.layers.0.linear2"} <= set(titles)
    # Picking layer 4 moves the transport there; layers 1–3 and 5–6 fold around it.
    page.get_by_role("spinbutton", name="TransformerEncoderLayer number").fill("4")
    page.get_by_role("spinbutton", name="TransformerEncoderLayer number").press("Enter")
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 3")
    settled(page)
    assert {"TransformerEncoderLayer 1–3 of 6", "TransformerEncoderLayer 5–6 of 6"} <= set(_shown(page))
    _check_texts(page, "transformer layer 4")
    page.screenshot(path=str(artifacts_dir / f"readable-transformer-layer4-{page.size_id}.png"))


def _lessons() -> list[str]:
    return [lesson.title for lesson in all_lessons()]


def test_every_lesson_is_readable_at_fit(sized: Any) -> None:
    page = sized
    titles = _lessons()
    assert len(titles) >= 10
    for title in titles:
        page.get_by_text("Examples", exact=True).click()
        page.get_by_role("button", name=re.compile("^" + re.escape(title))).click()
        run_code(page)
        if not page.evaluate("window.gradtrace.app.index.nodes.length"):
            continue
        _fit(page)
        _check_texts(page, f"lesson {title!r} at Fit")


def test_inplace_error_is_readable_at_fit_and_nothing_is_cut_off(sized: Any, artifacts_dir: Path) -> None:
    page = sized
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("inplace_hazard").title))).click()
    run_code(page)
    _fit(page)
    texts = _check_texts(page, "in-place error at Fit")
    drawn = [t["text"] for t in texts]
    # The node whose saved tensor changed and the op that changed it are both marked, whole.
    assert any(t.startswith("⚠") for t in drawn) and any("add_" in t for t in drawn), drawn
    page.screenshot(path=str(artifacts_dir / f"readable-inplace-{page.size_id}.png"))
