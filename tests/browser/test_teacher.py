"""A teacher's view (the programs a teacher preparing a class tried, tests/programs.py, and
lesson 14), at 1280×800 and 900×700 in Chromium: zoomed out, every box keeps a title or a short
form; search finds names with `_`; a share link restores the step, the selection, the open
groups and the camera; presentation mode gives the graph most of the width.
Screenshots go to tests/artifacts/teacher-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import expect

from browser.pageutil import run_code
from gradtrace.lessons import all_lessons
from pageguard import expect_http_error, wait_until
from programs import GAN_STEP, GRU_200, MAML, PINN

pytestmark = pytest.mark.browser

SIZES = [(1280, 800), (900, 700)]
LESSON_14 = next(x for x in all_lessons() if x.number == 14).code
PROGRAMS = {"gan": GAN_STEP, "pinn": PINN, "maml": MAML, "gru": GRU_200, "lesson14": LESSON_14}

# The boxes drawn on screen that say nothing: no text of their own placed, and no module box
# or unit outline around them whose title is placed. Drawn synchronously (drawNow), so what
# `placed` holds is this frame's.
SILENT_BOXES = """() => {
  const c = window.gradtrace.app.canvas; c.drawNow();
  const s = c.scene, cam = c.cam, { w, h } = c._size();
  const own = new Set(c.placed.filter((p) => p.node !== undefined).map((p) => p.node));
  // a module's title, or zoomed out its name over its region (NOTE [modules as regions] in render/draw.js)
  const titled = s.boxes.filter((b) => c.placed.some((p) => (p.kind === 'title' || p.kind === 'region')
      && p.x >= (b.x0 - cam.x) * cam.k - 1 && p.x <= (b.x1 - cam.x) * cam.k
      && p.y >= (b.y0 - cam.y) * cam.k - 14 && p.y <= (b.y1 - cam.y) * cam.k));
  const out = [];
  s.view.vnodes.forEach((n, v) => {
    if (!(s.reveal[v] <= c.k)) return;
    const x0 = (s.x[v] - n.w / 2 - cam.x) * cam.k, x1 = (s.x[v] + n.w / 2 - cam.x) * cam.k;
    const y0 = (s.y[v] - n.h / 2 - cam.y) * cam.k, y1 = (s.y[v] + n.h / 2 - cam.y) * cam.k;
    if (x1 < 0 || y1 < 0 || x0 > w || y0 > h) return;
    if (own.has(v)) return;
    // What is in view of the box: cut by the canvas's edges and the minimap (the camera was
    // moved by hand); a part too small for one letter at 9 px has no room for a text.
    const vx0 = Math.max(x0, 0), vx1 = Math.min(x1, w), vy0 = Math.max(y0, 0), vy1 = Math.min(y1, h);
    const mm = document.querySelector('#graph canvas.gt-minimap');
    if (mm && !mm.hidden) {
      const r = mm.getBoundingClientRect(), g = document.querySelector('#graph').getBoundingClientRect();
      const mx0 = r.left - g.left, my0 = r.top - g.top;
      if ((vx0 + vx1) / 2 >= mx0 && (vy0 + vy1) / 2 >= my0) return;
    }
    if (vx1 - vx0 < 8 || vy1 - vy0 < 11) return;
    const inTitled = titled.some((b) => s.x[v] >= b.x0 && s.x[v] <= b.x1 && s.y[v] >= b.y0 && s.y[v] <= b.y1);
    if (!inTitled) out.push({ label: n.label, w: x1 - x0, x0, y0, x1, y1, cw: w, ch: h });
  });
  return { silent: out, k: cam.k, texts: c.placed.length };
}"""


def shoot(page: Any, artifacts_dir: Path, name: str, size: tuple[int, int]) -> None:
    page.screenshot(path=str(artifacts_dir / f"teacher-{name}-{size[0]}x{size[1]}.png"))


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_zoomed_out_every_box_keeps_a_title_or_a_short_form(playground: Any, artifacts_dir: Path, name: str,
                                                            size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, PROGRAMS[name])
    page.get_by_role("button", name="Whole graph").click()
    whole = page.evaluate(SILENT_BOXES)
    shoot(page, artifacts_dir, f"{name}-whole", size)
    assert whole["silent"] == [], f"{name}, whole graph at zoom {whole['k']:.2f}: boxes without any title"
    # Fit, then "−" until node labels are below 9 px (12 px × k < 9): the overview level.
    page.get_by_role("button", name="Fit").click()
    for _ in range(8):
        if page.evaluate("window.gradtrace.app.canvas.cam.k") * 12 < 9:
            break
        page.get_by_role("button", name="Zoom out").click()
    out = page.evaluate(SILENT_BOXES)
    shoot(page, artifacts_dir, f"{name}-overview", size)
    assert out["k"] * 12 < 9 and out["texts"] > 0
    assert out["silent"] == [], f"{name}, zoomed out to {out['k']:.2f}: boxes without any title"


def test_search_finds_names_with_an_underscore(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, GRU_200)
    box = page.get_by_role("searchbox")
    for query in ("weight_hh", "weighthh"):
        box.fill(query)
        box.press("Enter")
        wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
        name = page.evaluate("""(() => { const a = window.gradtrace.app, v = a.viewer.selectedV;
            return a.index.nodes[a.scene.view.vnodes[v].refs[0]].name || ''; })()""")
        assert "weight_hh" in name, (query, name)
        expect(page.locator("#search-count")).not_to_have_text("no match")
    shoot(page, artifacts_dir, "search-weight_hh", (1280, 800))


VIEW = """() => { const a = window.gradtrace.app, v = a.viewer, st = v.state.state, c = a.canvas, { w, h } = c._size();
  const sel = v.selectedV;
  return { step: a.player.k, sel: sel >= 0 ? a.index.nodes[a.scene.view.vnodes[sel].refs[0]].id : null,
    open: [...st.open].sort(), collapsed: [...st.collapsed].sort(), repeats: [...st.expandedRepeats].sort(),
    cx: c.cam.x + w / 2 / c.cam.k, cy: c.cam.y + h / 2 / c.cam.k, k: c.cam.k }; }"""


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_a_share_link_restores_step_selection_open_groups_and_camera(
        playground: Any, browser: Any, live_server: Any, artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, GAN_STEP)
    # Another step, a folded group opened, a module folded, a node selected, the camera moved.
    n = page.evaluate("window.gradtrace.app.player.N")
    page.evaluate(f"window.gradtrace.app.player.go({n // 2}, {{ fromUser: true }})")
    page.evaluate("""async () => { const v = window.gradtrace.app.viewer;
        const g = v.scene.view.vnodes.findIndex((x) => x.kind === 'group' && x.fold);
        if (g >= 0) await v.openGroup(g);
        const mod = [...v.model.tree.mods.keys()].find((p) => !v.state.get('collapsed').has(p));
        if (mod) await v.toggleModule(mod); }""")
    page.evaluate("""() => { const a = window.gradtrace.app, vs = a.scene.view.vnodes;
        const v = vs.findIndex((x, i) => x.kind === 'function' && a.scene.reveal[i] <= a.player.k);
        a.viewer.selectNode(v); a.canvas.lookAt(a.scene.x[v] + 40, a.scene.y[v] + 25, 0.9); }""")
    before = page.evaluate(VIEW)
    assert before["sel"] and (before["open"] or before["collapsed"])
    page.get_by_role("button", name="Share").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    url = page.get_by_label("Link").input_value()
    q = parse_qs(urlparse(url).query)
    assert q["step"] == [str(before["step"])] and q["sel"] == [before["sel"]] and "cam" in q
    page.get_by_role("button", name="Close").click()

    other = browser.new_page(viewport={"width": size[0], "height": size[1]})
    other.goto(url)
    wait_until(other, "Number(document.body.dataset.ready || 0) > 0")
    after = other.evaluate(VIEW)
    other.screenshot(path=str(artifacts_dir / f"teacher-share-restored-{size[0]}x{size[1]}.png"))
    for key in ("step", "sel", "open", "collapsed", "repeats"):
        assert after[key] == before[key], key
    assert after["k"] == pytest.approx(before["k"], abs=1e-3)
    assert after["cx"] == pytest.approx(before["cx"], abs=1) and after["cy"] == pytest.approx(before["cy"], abs=1)
    other.close()


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_presentation_mode_gives_the_graph_most_of_the_width(playground: Any, browser: Any, live_server: Any,
                                                             artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, PINN)
    normal = page.locator("#graph").bounding_box()
    page.get_by_role("button", name="Present").click()
    wait_until(page, "new URL(location.href).searchParams.get('mode') === 'present'")
    wait_until(page, f"document.querySelector('#graph').getBoundingClientRect().width >= {0.8 * size[0]}")
    graph = page.locator("#graph").bounding_box()
    assert normal is not None and graph is not None and graph["width"] > normal["width"]
    font = page.evaluate("parseFloat(getComputedStyle(document.querySelector('#sentence')).fontSize)")
    assert font >= 20, "the sentence is set larger for a projector"
    expect(page.get_by_role("button", name="Show the code (leave presentation mode)")).to_be_visible()
    shoot(page, artifacts_dir, "present", size)
    # Kept in share links, and a link with it opens in it.
    page.get_by_role("button", name="Share").click()
    expect(page.get_by_role("dialog")).to_be_visible()
    url = page.get_by_label("Link").input_value()
    assert parse_qs(urlparse(url).query)["mode"] == ["present"]
    other = browser.new_page(viewport={"width": size[0], "height": size[1]})
    other.goto(url)
    wait_until(other, "Number(document.body.dataset.ready || 0) > 0")
    box = other.locator("#graph").bounding_box()
    assert box is not None and box["width"] >= 0.8 * size[0]
    other.close()
    page.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Show the code (leave presentation mode)").click()
    wait_until(page, "new URL(location.href).searchParams.get('mode') === null")
    expect(page.locator(".cm-content")).to_be_visible()


def test_an_unknown_share_shows_a_styled_page_that_says_what_happened(page: Any, live_server: Any,
                                                                      artifacts_dir: Path) -> None:
    expect_http_error(page, 404, "/s/doesnotexist0000")
    resp = page.goto(live_server.url + "/s/doesnotexist0000")
    assert resp is not None and resp.status == 404
    expect(page.get_by_role("heading", name="This share link leads nowhere")).to_be_visible()
    expect(page.get_by_role("link", name="Open the playground")).to_have_attribute("href", "/")
    page.screenshot(path=str(artifacts_dir / "teacher-unknown-share.png"))


COVERED = """() => {
  const c = window.gradtrace.app.canvas; c.drawNow();
  const mm = document.querySelector('#graph canvas.gt-minimap');
  if (mm.hidden) return { shown: false, covered: [] };
  const r = mm.getBoundingClientRect(), g = document.querySelector('#graph').getBoundingClientRect();
  const x = r.left - g.left, y = r.top - g.top;
  const covered = c.placed.filter((p) => p.x < x + r.width && p.x + p.w > x && p.y < y + r.height && p.y + p.h > y)
    .map((p) => p.text);
  return { shown: true, covered };
}"""


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_minimap_covers_no_label(playground: Any, artifacts_dir: Path, name: str, size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, PROGRAMS[name])
    shown = 0
    for how in ("Fit", "Zoom in", "Zoom out", "Zoom out"):
        page.get_by_role("button", name=how).click()
        seen = page.evaluate(COVERED)
        assert seen["covered"] == [], f"{name} after {how}: the minimap covers {seen['covered']}"
        shown += seen["shown"]
    # Half-way through the last backward, at Fit, with the node list's selection: the same holds.
    n = page.evaluate("window.gradtrace.app.player.N")
    page.evaluate(f"window.gradtrace.app.player.go({n - n // 4}, {{ fromUser: true }})")
    page.get_by_role("button", name="Fit").click()
    seen = page.evaluate(COVERED)
    shoot(page, artifacts_dir, f"{name}-minimap", size)
    assert seen["covered"] == [], f"{name} at step {n - n // 4}: the minimap covers {seen['covered']}"
    if name in ("gru", "lesson14"):
        assert shown + seen["shown"] > 0, "the minimap never showed: this test checks nothing"


def test_the_legend_explains_every_mark(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, PINN)
    page.get_by_text("Legend", exact=True).click()
    legend = page.locator("#legend-list").inner_text()
    for mark in ("create_graph", "2nd order", "✂", "⚠", "✎", "(×N)", "module", "selected", "reached"):
        assert mark in legend, mark
    page.screenshot(path=str(artifacts_dir / "teacher-legend.png"))


def test_a_node_picked_from_the_node_list_is_brought_into_view(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, LESSON_14)
    page.get_by_role("button", name="Fit").click()
    for _ in range(3):
        page.get_by_role("button", name="Zoom in").click()
    off = page.evaluate("""() => { const a = window.gradtrace.app, c = a.canvas;
        return a.scene.view.vnodes.map((n, v) => v)
          .filter((v) => a.scene.reveal[v] <= a.player.k && !c.inView(v)); }""")
    assert off, "every node is in view: this test checks nothing"
    target = off[len(off) // 2]
    label = page.evaluate(f"window.gradtrace.app.scene.view.vnodes[{target}].label")
    # The accessible node list (screen readers, keyboard) lists every drawn node as a button.
    page.locator(f'#node-list button[data-v="{target}"]').dispatch_event("click")
    wait_until(page, f"window.gradtrace.app.viewer.selectedV === {target}")
    assert page.evaluate(f"window.gradtrace.app.canvas.inView({target})"), label
    shoot(page, artifacts_dir, "node-list-selection", (1280, 800))


def _download(page: Any, button: str, tmp_path: Path) -> bytes:
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name=button).click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    return path.read_bytes()


WORLD = """(which) => { const a = window.gradtrace.app;
  const src = which === 'canvas' ? { placed: a.canvas.placed, cam: a.canvas.cam } : a.sharer.lastExport;
  return src.placed.map((p) => ({ text: p.text, x: p.x / src.cam.k + src.cam.x, y: p.y / src.cam.k + src.cam.y,
    px: p.x, py: p.y })); }"""


@pytest.mark.parametrize("name", ["pinn", "gan"])
def test_png_and_svg_exports_hold_the_labels_of_the_screen_where_the_screen_has_them(
        playground: Any, tmp_path: Path, artifacts_dir: Path, name: str) -> None:
    import xml.etree.ElementTree as ET

    page = playground
    run_code(page, PROGRAMS[name])
    page.get_by_role("button", name="Whole graph").click()
    page.evaluate("window.gradtrace.app.canvas.drawNow()")
    screen = page.evaluate(WORLD, "canvas")
    svg_bytes = _download(page, "View as SVG", tmp_path)
    exported = page.evaluate(WORLD, "export")
    # The export draws the whole graph at the screen's zoom: every text of the screen at the
    # same place of the graph (compared in the graph's own coordinates, to a pixel). It may hold
    # more: texts beside the graph that the screen's edges left no room for.
    assert len(screen) > 5
    near = lambda a, b: a["text"] == b["text"] and abs(a["x"] - b["x"]) <= 1 and abs(a["y"] - b["y"]) <= 1  # noqa: E731
    missing = [t["text"] for t in screen if not any(near(t, e) for e in exported)]
    assert missing == [], f"texts of the screen not in the export, or elsewhere: {missing}"
    # The SVG puts each text where that placement put it, and holds the create_graph marks
    # and the legend; the PNG comes from the same drawing (its canvas, with the legend).
    svg = ET.fromstring(svg_bytes)
    ns = "{http://www.w3.org/2000/svg}"
    texts = [(t.text, float(t.get("x")), float(t.get("y"))) for t in svg.iter(ns + "text")
             if "label" in (t.get("class") or "")]
    assert sorted(t[0] for t in texts) == sorted(t["text"] for t in exported)
    by_text = {}
    for t in exported:
        by_text.setdefault(t["text"], []).append(t["px"])
    for text, x, _ in texts:
        assert any(abs(x - px) <= 3.5 for px in by_text[text]), (text, x, by_text[text])
    legend = " ".join(t.text or "" for g in svg.iter(ns + "g") if g.get("class") == "legend"
                      for t in g.iter(ns + "text"))
    if name == "pinn":
        assert [r for r in svg.iter(ns + "rect") if r.get("class") == "order1"], "no create_graph mark in the SVG"
        assert [r for r in svg.iter(ns + "rect") if r.get("class") == "order2"], "no second-order mark in the SVG"
        assert "create_graph" in legend and "2nd order" in legend
    png = _download(page, "View as PNG", tmp_path)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    (artifacts_dir / f"teacher-export-{name}.png").write_bytes(png)
    (artifacts_dir / f"teacher-export-{name}.svg").write_bytes(svg_bytes)
    dot = _download(page, "Graph as Graphviz DOT", tmp_path).decode()
    assert "subgraph \"cluster_" in dot and ' [label="∇ ' in dot


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_the_editor_indents_with_tab_follows_the_code_wraps_and_hands_over_to_the_graph(
        playground: Any, artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    code = "import torch\nfor i in range(3):\n  x = torch.ones(2, requires_grad=True)\n"
    page.evaluate("(c) => window.gradtrace.app.editor.setCode(c)", code)
    assert page.evaluate("window.gradtrace.app.editor.indentUnit") == "  "
    content = page.locator(".cm-content")
    content.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("if True:")
    page.keyboard.press("Enter")
    # A new block indents by the code's own step (2 spaces here), and Tab indents, in the editor.
    page.keyboard.type("y = 1")
    page.keyboard.press("Home")
    page.keyboard.press("Tab")
    text = page.evaluate("window.gradtrace.app.editor.code")
    assert text.endswith("if True:\n    y = 1"), repr(text)
    assert page.evaluate("document.activeElement.closest('.cm-editor') !== null"), "Tab left the editor"
    # Esc then Tab leaves it; Alt+G goes to the graph.
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('.cm-editor') === null"), "Esc, Tab stayed in the editor"
    content.click()
    page.keyboard.press("Alt+g")
    assert page.evaluate("document.activeElement.id") == "graph"
    # Soft wrap: on by default in a narrow window, and a toggle.
    wrap = page.get_by_role("button", name="Wrap")
    narrow = size[0] < 1180
    expect(wrap).to_have_attribute("aria-pressed", "true" if narrow else "false")
    wrap.click()
    expect(wrap).to_have_attribute("aria-pressed", "false" if narrow else "true")
    assert page.evaluate("document.querySelector('.cm-content').classList.contains('cm-lineWrapping')") is (not narrow)
    shoot(page, artifacts_dir, "editor", size)
