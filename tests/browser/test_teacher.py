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
  const titled = s.boxes.filter((b) => c.placed.some((p) => p.kind === 'title'
      && p.x >= (b.x0 - cam.x) * cam.k - 1 && p.x <= (b.x1 - cam.x) * cam.k && p.y >= (b.y0 - cam.y) * cam.k - 14 && p.y <= (b.y1 - cam.y) * cam.k));
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
        page.wait_for_function("window.gradtrace.app.viewer.selectedV >= 0")
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
def test_a_share_link_restores_step_selection_open_groups_and_camera(playground: Any, browser: Any, live_server: Any,
                                                                      artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, GAN_STEP)
    # Another step, a folded group opened, a module folded, a node selected, the camera moved.
    n = page.evaluate("window.gradtrace.app.player.N")
    page.evaluate(f"window.gradtrace.app.player.go({n // 2}, {{ fromUser: true }})")
    page.evaluate("""async () => { const v = window.gradtrace.app.viewer;
        const g = v.scene.view.vnodes.findIndex((x) => x.kind === 'group' && x.fold);
        if (g >= 0) await v.openGroup(g);
        const mod = [...v.tree.mods.keys()].find((p) => !v.state.get('collapsed').has(p));
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
    other.wait_for_function("Number(document.body.dataset.ready || 0) > 0")
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
    page.wait_for_function("new URL(location.href).searchParams.get('mode') === 'present'")
    page.wait_for_function(f"document.querySelector('#graph').getBoundingClientRect().width >= {0.8 * size[0]}")
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
    other.wait_for_function("Number(document.body.dataset.ready || 0) > 0")
    box = other.locator("#graph").bounding_box()
    assert box is not None and box["width"] >= 0.8 * size[0]
    other.close()
    page.get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Show the code (leave presentation mode)").click()
    page.wait_for_function("new URL(location.href).searchParams.get('mode') === null")
    expect(page.locator(".cm-content")).to_be_visible()


def test_an_unknown_share_shows_a_styled_page_that_says_what_happened(page: Any, live_server: Any,
                                                                      artifacts_dir: Path) -> None:
    resp = page.goto(live_server.url + "/s/doesnotexist0000")
    assert resp is not None and resp.status == 404
    expect(page.get_by_role("heading", name="This share link leads nowhere")).to_be_visible()
    expect(page.get_by_role("link", name="Open the playground")).to_have_attribute("href", "/")
    page.screenshot(path=str(artifacts_dir / "teacher-unknown-share.png"))
