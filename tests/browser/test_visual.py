"""Each page kind as a person sees it (NOTE [what a person sees] in tests/browser/seen.py), at
1280×800 and 900×700, in light and in dark: the playground at Fit, while stepping, in Present
mode and with the whole graph framed (⤢), on a lesson, on a GRU cell unrolled 200 steps and on a
6-layer transformer; the compare page; a share page; an error page; a saved HTML file opened
from disk. On each: the graph is drawn and lies within the window, its labels lie within it
and apart, and no text of the page is cut or lies over another. Screenshots:
tests/artifacts/visual-*.png.

One server, one browser and one page per program: a program runs once, then every size,
colour scheme and view of it is looked at in turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from browser.pageutil import open_saved_file, run_code, run_example
from browser.seen import Seen, seen
from gradtrace.lessons import lesson
from pageguard import expect_http_error, wait_until
from programs import GRU_200, MAML, TRANSFORMER_6

pytestmark = pytest.mark.browser

SIZES = [(1280, 800), (900, 700)]
SCHEMES = ["light", "dark"]
STATES = ["fit", "stepping", "present", "whole"]
PROGRAMS = {"lesson": "mlp_loss", "maml": MAML, "gru200": GRU_200, "transformer6": TRANSFORMER_6}
"""The lesson by its id (run from the gallery), the others as code (tests/programs.py): MAML's
inner step (create_graph=True) puts gradients' own graph, and their labels, on the canvas."""
SMALL = ("lesson",)
"""Programs that Fit shows whole at the end of the run (NOTE [small graphs whole] in
render/fit.js). MAML's 18 nodes are one chain of 15 rows: too tall to show whole with its labels
in the graph's panel, so Fit frames its active part at a legible zoom."""

SIZE_IDS = [f"{w}x{h}" for w, h in SIZES]


def _look(page: Any, size: tuple[int, int], scheme: str) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.emulate_media(color_scheme=scheme)


SETTLED = """() => new Promise((resolve) => {
  const g = window.gradtrace || {};
  const views = [g.app && g.app.canvas, g.viewer && g.viewer.canvas,
                 g.page && g.page.panes && g.page.panes.a.canvas, g.page && g.page.panes && g.page.panes.b.canvas];
  const now = () => views.map((c) => (c ? c.frames : 0)).join() + `|${innerWidth}x${innerHeight}`;
  let last = null, same = 0, polls = 0;
  const tick = () => {
    const state = now();
    same = state === last ? same + 1 : 0;
    last = state;
    if (same >= 3 || ++polls > 600) resolve(); else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})"""
"""Resolves once no graph has drawn a new frame for three animation frames: the resize, the
theme, the camera and a step's moving dots are all drawn."""


def _settle(page: Any) -> None:
    page.evaluate(SETTLED)


def _check(page: Any, artifacts_dir: Path, name: str, *, graphs: int, whole: bool = False) -> Seen:
    """Screenshot the page and check what it shows; ``whole``: the whole graph should be in view."""
    _settle(page)
    page.screenshot(path=str(artifacts_dir / f"visual-{name}.png"))
    got = seen(page)
    assert got.texts > 3, f"{name}: the page shows almost no text ({got.texts} elements)"
    assert len(got.graphs) == graphs, f"{name}: {len(got.graphs)} graphs, expected {graphs}"
    problems = got.graph_problems() + got.label_problems() + [f"cut: {c}" for c in got.cut] + [
        f"overlap: {o}" for o in got.overlaps] + (got.cut_graphs() if whole else [])
    assert problems == [], f"{name}:\n" + "\n".join(problems)
    return got


@pytest.fixture(scope="module")
def playground_with(request: pytest.FixtureRequest, browser: Any, live_server: Any,
                    frontend_bundle: Path) -> Iterator[tuple[str, Any]]:
    """The playground with one program run (the module's tests are grouped by program)."""
    name = request.param
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    page = context.new_page()
    try:
        page.goto(live_server.url + "/")
        wait_until(page, "window.gradtrace !== undefined")
        code = PROGRAMS[name]
        if name == "lesson":
            run_example(page, code)
        else:
            run_code(page, code)
        yield name, page
    finally:
        context.close()


def _present(page: Any, on: bool) -> None:
    button = page.locator("#present")
    if (button.get_attribute("aria-pressed") == "true") != on:
        button.click()
        wait_until(page, f"document.querySelector('#present').getAttribute('aria-pressed') === '{str(on).lower()}'")


@pytest.mark.parametrize("playground_with", list(PROGRAMS), indirect=True)
@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_the_playground(playground_with: tuple[str, Any], state: str, scheme: str, size: tuple[int, int],
                        artifacts_dir: Path) -> None:
    name, page = playground_with
    _present(page, state == "present")
    _look(page, size, scheme)
    n = page.evaluate("window.gradtrace.app.timeline.N")
    if state == "stepping":
        page.locator("#graph").focus()
        page.keyboard.press("Home")
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        wait_until(page, "window.gradtrace.app.player.k === 3")
        page.get_by_role("button", name="Fit").click()
    else:
        page.evaluate(f"window.gradtrace.app.player.go({n}, {{ fromUser: true }})")
        _settle(page)
        if state == "whole":
            page.get_by_role("button", name="Whole graph").click()
        else:
            page.get_by_role("button", name="Fit").click()
    # The whole graph is meant to be in view after ⤢, and at Fit at the end of a small run.
    whole = state == "whole" or (name in SMALL and state in ("fit", "present"))
    _check(page, artifacts_dir, f"{name}-{state}-{size[0]}x{size[1]}-{scheme}", graphs=1, whole=whole)


def _open_layer(page: Any, layer: int) -> None:
    spin = page.get_by_role("spinbutton", name="TransformerEncoderLayer number")
    spin.fill(str(layer))
    spin.press("Enter")
    wait_until(page, f"window.gradtrace.app.viewer.openUnits[0] === {layer - 1}")


@pytest.mark.parametrize("playground_with", ["transformer6"], indirect=True)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_later_layer_of_the_transformer(playground_with: tuple[str, Any], size: tuple[int, int],
                                          artifacts_dir: Path) -> None:
    """Layers 2 and 4 opened from the picker, and stepped on from there: the module titles
    (the narrow dropout boxes beside norm2) keep clear of the other boxes and of the edges."""
    _, page = playground_with
    _present(page, False)
    _look(page, size, "light")
    try:
        for layer in (2, 4):
            _open_layer(page, layer)
            page.get_by_role("button", name="Fit").click()
            _check(page, artifacts_dir, f"transformer6-layer{layer}-{size[0]}x{size[1]}", graphs=1)
            page.locator("#graph").focus()
            for _ in range(3):
                page.keyboard.press("ArrowRight")
            page.get_by_role("button", name="Fit").click()
            _check(page, artifacts_dir, f"transformer6-layer{layer}-on-{size[0]}x{size[1]}", graphs=1)
    finally:
        _open_layer(page, 1)


@pytest.fixture(scope="module")
def stored(live_server: Any) -> dict[str, Any]:
    """Two runs kept by the service (a lesson, and the same lesson edited) and a share of the first."""
    code = lesson("mlp_loss").code
    with httpx.Client(base_url=live_server.url, timeout=120) as api:
        a = api.post("/api/runs", json={"code": code})
        b = api.post("/api/runs", json={"code": code.replace("torch.manual_seed(0)", "torch.manual_seed(1)")})
        assert a.status_code == 200 and b.status_code == 200, (a.text, b.text)
        share = api.post("/api/shares", json={"run_id": a.json()["id"]})
        assert share.status_code in (200, 201), share.text
        doc = api.get(f"/api/runs/{a.json()['id']}").json()
    return {"a": a.json()["id"], "b": b.json()["id"], "share": share.json()["id"], "doc": doc}


@pytest.fixture(scope="module")
def other_page(browser: Any, frontend_bundle: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_the_compare_page(other_page: Any, live_server: Any, stored: dict[str, Any], artifacts_dir: Path,
                          size: tuple[int, int], scheme: str) -> None:
    page = other_page
    _look(page, size, scheme)
    page.goto(f"{live_server.url}/c/{stored['a']}..{stored['b']}")
    wait_until(page, "document.body.dataset.ready === '1'", timeout=90_000)
    page.get_by_role("button", name="End").click()  # both runs' last step: every node drawn
    n = page.evaluate("window.gradtrace.page.cmp.steps.length")
    wait_until(page, f"document.querySelector('#c-label').textContent.startsWith('Step {n}/{n}')")
    # Each pane frames its whole graph (what differs may be anywhere), and no minimap covers it.
    _check(page, artifacts_dir, f"compare-{size[0]}x{size[1]}-{scheme}", graphs=2, whole=True)
    assert page.evaluate("['a', 'b'].every((s) => window.gradtrace.page.panes[s].canvas.minimap.canvas.hidden)")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_share_page(other_page: Any, live_server: Any, stored: dict[str, Any], artifacts_dir: Path,
                      size: tuple[int, int], scheme: str) -> None:
    page = other_page
    _look(page, size, scheme)
    page.goto(f"{live_server.url}/s/{stored['share']}")
    wait_until(page, "Number(document.body.dataset.ready || 0) > 0", timeout=60_000)
    # A share opens at the end of the run, at Fit: the lesson's whole graph is in view.
    _check(page, artifacts_dir, f"share-{size[0]}x{size[1]}-{scheme}", graphs=1, whole=True)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_an_error_page(other_page: Any, live_server: Any, artifacts_dir: Path, size: tuple[int, int],
                       scheme: str) -> None:
    page = other_page
    _look(page, size, scheme)
    expect_http_error(page, 404, "/s/doesnotexist")
    response = page.goto(f"{live_server.url}/s/doesnotexist")
    assert response is not None and response.status == 404
    got = _check(page, artifacts_dir, f"error-{size[0]}x{size[1]}-{scheme}", graphs=0)
    # The card is drawn as designed: centred in the window, in the scheme's colours.
    card = page.locator("main").bounding_box()
    assert card is not None and abs(card["x"] + card["width"] / 2 - size[0] / 2) < 2, card
    assert card["y"] > 0 and card["y"] + card["height"] < size[1], card
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    dark = sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 3 * 128
    assert dark == (scheme == "dark"), background
    assert got.texts >= 4


@pytest.fixture(scope="module")
def saved_file(stored: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gradtrace.notebook.html import save_html

    return save_html(stored["doc"], tmp_path_factory.mktemp("visual") / "saved.html")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_saved_file(browser: Any, saved_file: Path, artifacts_dir: Path, size: tuple[int, int],
                      scheme: str) -> None:
    with open_saved_file(browser, saved_file, viewport={"width": size[0], "height": size[1]},
                         color_scheme=scheme) as opened:
        # It opens at the end of the run, at Fit: the lesson's whole graph is in view.
        _check(opened.page, artifacts_dir, f"saved-{size[0]}x{size[1]}-{scheme}", graphs=1, whole=True)
