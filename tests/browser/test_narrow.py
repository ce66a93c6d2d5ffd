"""Small windows: at 900×700 and 1024×768 the graph keeps more than half of the window's
height while the step sentence, the transport and the inspector stay in view (the inspector
moves under the code, app.css NOTE [narrow windows]); 1440×900 keeps its three columns. And
Fit on a module call taller than the panel (layer 4 of a 6-layer transformer) puts the current
node in the middle band and uses the canvas (render/canvas.js NOTE [fit]).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import pick_node, run_code, run_example, settled
from browser.test_readable import TRANSFORMER
from gradtrace.lessons import lesson
from pageguard import wait_until

pytestmark = pytest.mark.browser

SIZES = [(900, 700), (1024, 768), (1440, 900)]

BOX = """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
  return { x: r.x, y: r.y, w: r.width, h: r.height }; }"""


def _box(page: Any, sel: str) -> dict[str, float]:
    return dict(page.evaluate(BOX, sel))


def _inside(b: dict[str, float], vw: int, vh: int) -> bool:
    return (b["w"] > 0 and b["h"] > 0 and b["x"] >= 0 and b["y"] >= 0
            and b["x"] + b["w"] <= vw + 0.5 and b["y"] + b["h"] <= vh + 0.5)


def _at(page: Any, size: tuple[int, int]) -> Any:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    settled(page)
    return page


def _layer4(page: Any) -> None:
    run_code(page, TRANSFORMER)
    spin = page.get_by_role("spinbutton", name="TransformerEncoderLayer number")
    spin.fill("4")
    spin.press("Enter")
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 3")
    settled(page)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_graph_keeps_most_of_the_window_and_the_panels_stay_in_view(playground: Any, artifacts_dir: Path,
                                                                     size: tuple[int, int]) -> None:
    vw, vh = size
    page = _at(playground, size)
    _layer4(page)
    graph = _box(page, "#graph")
    share = 0.55 if vw < 1180 else 0.6
    assert graph["h"] >= share * vh, f"the graph is {graph['h']:.0f} px tall in a {vw}×{vh} window"
    for sel in ("#sentence", "#tl-play", "#tl-scrub", "#inspector", "#fit", "#search"):
        assert _inside(_box(page, sel), vw, vh), f"{sel} is not in view at {vw}×{vh}: {_box(page, sel)}"
    assert page.evaluate("document.documentElement.scrollHeight <= window.innerHeight + 1")
    # The inspector shows a picked node without covering the graph.
    pick_node(page, "NativeLayerNormBackward0")
    inspector = page.locator("#inspector")
    expect(inspector.locator("h3")).to_contain_text("NativeLayerNormBackward0")
    ib = _box(page, "#inspector")
    assert ib["x"] + ib["w"] <= graph["x"] + 0.5 or ib["x"] >= graph["x"] + graph["w"] - 0.5, (ib, graph)
    # The key hint is the graph's description, and in view while the graph has keyboard focus.
    page.locator("#graph").focus()
    expect(page.locator("#graph")).to_be_focused()
    keys = _box(page, "#graph-keys")
    assert keys["w"] > 100 and _inside(keys, vw, vh), keys
    # Showing it moves nothing: the graph keeps its place and size.
    again = _box(page, "#graph")
    assert all(abs(again[c] - graph[c]) < 1 for c in "xywh"), (graph, again)
    assert page.locator("#graph").get_attribute("aria-describedby") == "graph-keys"
    page.screenshot(path=str(artifacts_dir / f"narrow-layout-{vw}x{vh}.png"))


# The rows of the base canvas with ink on them (not the background colour), the node under
# test's screen centre, and whether drawn nodes lie beyond each edge of the canvas.
MEASURE = """() => {
  const c = window.gradtrace.app.canvas, s = c.scene;
  c.drawNow();
  const cv = c.base, ctx = cv.getContext('2d'), d = ctx.getImageData(0, 0, cv.width, cv.height).data;
  const W = cv.width, H = cv.height, dpr = c.dpr, bg = [d[0], d[1], d[2]];
  let first = -1, last = -1;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x += 2) {
      const i = (y * W + x) * 4;
      if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 40) {
        if (first < 0) first = y;
        last = y;
        break;
      }
    }
  }
  const [v] = c.stepState().current;
  const w = c.host.clientWidth, h = c.host.clientHeight, k = c.cam.k;
  const sy = (y) => (y - c.cam.y) * k;
  let above = false, below = false;
  s.view.vnodes.forEach((n, i) => {
    if (!(s.reveal[i] <= c.k)) return;
    if (sy(s.y[i] - n.h / 2) < 0) above = true;
    if (sy(s.y[i] + n.h / 2) > h) below = true;
  });
  return { h, w, k, first: first / dpr, last: last / dpr, vy: sy(s.y[v]), vx: (s.x[v] - c.cam.x) * k,
           label: s.view.vnodes[v].label, above, below, reserve: c.reserve() };
}"""


def _check_frame(page: Any, what: str) -> dict[str, Any]:
    m = page.evaluate(MEASURE)
    h = m["h"] - m["reserve"][1]
    assert m["k"] * 11 >= 9, f"{what}: text at {m['k'] * 11:.1f} px"
    assert 0.25 * h <= m["vy"] <= 0.75 * h, f"{what}: the current node is at {m['vy']:.0f} of {h:.0f} px: {m}"
    # Graph goes on above the view: the canvas is used down to near its bottom (and vice versa).
    if m["above"]:
        assert m["h"] - m["last"] <= 0.4 * m["h"], f"{what}: {m['h'] - m['last']:.0f} of {m['h']} px empty below: {m}"
    if m["below"]:
        assert m["first"] <= 0.4 * m["h"], f"{what}: {m['first']:.0f} of {m['h']} px empty above: {m}"
    return m


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_fit_frames_a_module_call_taller_than_the_panel(playground: Any, artifacts_dir: Path,
                                                        size: tuple[int, int]) -> None:
    vw, vh = size
    page = _at(playground, size)
    _layer4(page)
    page.get_by_role("button", name="Fit").click()
    settled(page)
    m = _check_frame(page, "layer 4, end of its forward")
    assert m["above"], "layer 4 is taller than the panel: the graph should go on above the view"
    page.screenshot(path=str(artifacts_dir / f"narrow-fit-layer4-{vw}x{vh}.png"))
    # In the backward pass, inside layer 4 (every node drawn): the same framing.
    # In the backward pass, half-way through layer 4 (every node drawn): the same framing.
    page.evaluate("""() => { const a = window.gradtrace.app, tl = a.timeline, s = a.scene;
        const open = new Set(s.active), steps = [];
        for (let k = 1; k <= tl.N; k++) {
          if (tl.passAt(k) < 0) continue;
          const vs = s.view.byRef[tl.evNode[k - 1]] || [];
          if (vs.some((v) => open.has(v))) steps.push(k);
        }
        a.player.go(steps[steps.length >> 1]);
      }""")
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 3 && window.gradtrace.app.player.k > 400")
    settled(page)
    page.get_by_role("button", name="Fit").click()
    settled(page)
    m = _check_frame(page, "layer 4, backward")
    page.screenshot(path=str(artifacts_dir / f"narrow-fit-layer4-backward-{vw}x{vh}.png"))


def test_transformer_lesson_shows_what_its_introduction_says(playground: Any, artifacts_dir: Path) -> None:
    """Lesson 14's introduction (lessons/snippets/14_transformer_block.py) describes the page:
    the layer at work is open, the other is folded into one box that a click opens, and the
    picker above the graph moves the timeline to a layer."""
    page = playground
    intro = lesson("transformer_block").intro
    assert "other is folded" in intro and "open" in intro, intro
    doc = run_example(page, "transformer_block")
    assert doc["status"] == "ok"
    # one title per module (a wrapped layout draws a module cut by a column end as a box per column)
    titles = page.evaluate("[...new Set(window.gradtrace.app.scene.boxes.map(b => b.title || ''))]")
    open_layers = [t for t in titles if "TransformerEncoderLayer" in t]
    assert len(open_layers) == 1 and open_layers[0].startswith("▾ encoder.layers."), titles
    folds = page.evaluate("window.gradtrace.app.scene.view.vnodes.filter(v => v.fold).map(v => v.label)")
    assert len(folds) == 1 and "TransformerEncoderLayer" in folds[0], folds
    expect(page.get_by_role("group", name="Iteration")).to_contain_text("of 2")
    page.screenshot(path=str(artifacts_dir / "lesson14.png"))
    # The folded layer opens on a click (the fold is drawn on the canvas, centred first).
    x, y = page.evaluate("""() => { const c = window.gradtrace.app.canvas, s = c.scene;
        const v = s.view.vnodes.findIndex(n => n.fold); c.centerOn(v); c.drawNow();
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (s.x[v] - c.cam.x) * c.cam.k, r.top + (s.y[v] - c.cam.y) * c.cam.k]; }""")
    page.mouse.click(x, y)
    wait_until(page, "new Set(window.gradtrace.app.scene.boxes"
                     ".filter(b => (b.title || '').includes('TransformerEncoderLayer'))"
                     ".map(b => b.path)).size === 2")
