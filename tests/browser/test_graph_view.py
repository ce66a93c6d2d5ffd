"""The graph view: module boxes that collapse and expand, repeated blocks merged, the legend,
zoom and fit, big graphs in the worker with a minimap, themes and a laptop-sized screen."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import canvas_ink, node_texts, pick_node, run_code, run_example, settled
from browser.synth import synthetic_document
from gradtrace.schema import RunDocument
from pageguard import wait_until

pytestmark = pytest.mark.browser


def _names(page: Any) -> list[str]:
    return [t.split(" — ")[0] for t in node_texts(page)]


def test_collapsing_a_module_draws_it_as_one_box_and_expanding_restores_it(playground: Any,
                                                                           artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "mlp_loss")
    in_first = [n for n in doc["graph"]["nodes"] if n.get("module") == "model.0"]
    assert in_first, "capture recorded no node inside model.0"
    full = _names(page)
    page.get_by_text("Modules", exact=True).click()
    page.get_by_role("button", name="Collapse model.0").click()
    expect(page.get_by_role("button", name="Expand model.0")).to_be_visible()
    wait_until(page, f"document.querySelectorAll('#node-list li').length < {len(full)}")
    collapsed = _names(page)
    assert "model.0" in collapsed
    for n in in_first:
        assert collapsed.count(n["name"]) == full.count(n["name"]) - sum(
            1 for m in in_first if m["name"] == n["name"])
    page.screenshot(path=str(artifacts_dir / "module-collapsed.png"))
    page.get_by_role("button", name="Expand model.0").click()
    wait_until(page, f"document.querySelectorAll('#node-list li').length === {len(full)}")
    assert sorted(_names(page)) == sorted(full)


def _layer0_output_grad_norm(code: str) -> float:
    """Run a lesson in torch here and return the norm of the gradient that reached the first
    TransformerEncoderLayer's output: what autograd summed over that output's uses."""
    import torch

    grads: list[torch.Tensor] = []

    def hook(module: torch.nn.Module, args: Any, out: Any) -> None:
        if type(module).__name__ == "TransformerEncoderLayer" and not grads:
            grads.append(torch.empty(0))
            out.register_hook(lambda g: grads.__setitem__(0, g.detach().clone()))

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        torch.manual_seed(0)  # the page runs a snippet with seed 0
        exec(compile(code, "lesson", "exec"), {"__name__": "__lesson__"})
    finally:
        handle.remove()
    return float(grads[0].norm())


def test_transformer_layers_fold_around_the_active_one_and_their_edge_sums(playground: Any,
                                                                          artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "transformer_block")
    names = _names(page)
    # The layer active at the last step (backward ends in layer 0) is open, the other folded.
    assert "TransformerEncoderLayer 2 of 2" in names
    boxes = page.evaluate("window.gradtrace.app.scene.boxes.map(b => b.title || b.path)")
    assert "▾ encoder.layers.0 · TransformerEncoderLayer 1 of 2" in boxes
    assert {"encoder.layers.0.self_attn", "encoder.layers.0.linear1"} <= set(boxes)
    page.screenshot(path=str(artifacts_dir / "transformer-layers.png"))
    # The edge from layer 0 into the folded layer 1 stands for every use of layer 0's output:
    # it shows their sum, the gradient autograd gave that output, as torch computes it.
    drawn = page.evaluate("""() => {
        const app = window.gradtrace.app, s = app.scene, { vnodes, vedges } = s.view;
        const lv = app.viewer.levels[0];
        const fold = vnodes.findIndex(v => v.fold);
        const into = vedges.map((e, i) => [e, i]).filter(([e]) => e.t === fold
            && vnodes[e.s].refs.every(r => lv.unitOf[r] === 0) && !vnodes[e.s].fold);
        into.sort((a, b) => b[0].refs.length - a[0].refs.length);
        const [e, i] = into[0];
        const st = app.canvas.stepState();
        const g = st.edgeGrad(i);
        return { parts: e.refs.length, norm: g && g.g.stats.norm, total: !!(g && g.total) }; }""")
    assert drawn["parts"] >= 2 and drawn["total"], drawn
    lesson_code = page.evaluate("window.gradtrace.app.doc.code")
    # This gradient is ~1e-7, what LayerNorm's cancellation leaves (NOTE [goldens on any CPU] in
    # backend/gradtrace/analysis/numbers.py): its last digits follow the kernels' and threads' summation
    # order, so it is compared to 10 %, not to float32 precision; the parts and the total are exact.
    assert drawn["norm"] == pytest.approx(_layer0_output_grad_norm(lesson_code), rel=0.1)
    # A fold of one layer opens at once (a fold of several shows them one by one first).
    pick_node(page, re.compile("^TransformerEncoderLayer 2 of 2"))
    page.get_by_role("button", name="Expand it").click()
    wait_until(page, "window.gradtrace.app.scene.boxes.some(b => b.path === 'encoder.layers.1')")
    assert not any(n.startswith("TransformerEncoderLayer") for n in _names(page))


def test_legend_explains_every_node_kind(playground: Any) -> None:
    page = playground
    page.get_by_text("Legend", exact=True).click()
    legend = page.locator("#legend-list")
    for text in ("Function node", "AccumulateGrad", "Leaf tensor", "Output", "Cut: detach() / no_grad",
                 "Module", "first NaN or inf was made", "dashed red edge", "a hint", "your code", "suspect",
                 "tied", "the snippet's variable"):
        expect(legend).to_contain_text(text)
    # opened, it ends inside the graph's area (it scrolls rather than cover the timeline)
    box, graph = legend.bounding_box(), page.locator("#graph").bounding_box()
    assert box and graph and box["y"] + box["height"] <= graph["y"] + graph["height"] + 1, (box, graph)


def test_detach_and_no_grad_cuts_are_drawn_as_cut_nodes(playground: Any) -> None:
    page = playground
    doc = run_example(page, "detach_and_no_grad")
    cuts = [n for n in doc["graph"]["nodes"] if n.get("cut")]
    names = _names(page)
    for n in cuts:
        assert f"✂ {n['cut']['kind']}{' ' + n['name'] if n['name'] else ''}" in names
    assert page.evaluate("window.gradtrace.app.scene.view.vedges.filter(e => e.cut).length") == sum(
        1 for n in cuts if n["cut"].get("source"))


def test_zoom_buttons_and_fit_change_the_camera(playground: Any) -> None:
    page = playground
    run_example(page, "recursion_tree")
    k0 = page.evaluate("window.gradtrace.app.canvas.cam.k")
    page.get_by_role("button", name="Zoom in").click()
    assert page.evaluate("window.gradtrace.app.canvas.cam.k") == pytest.approx(k0 * 1.25)
    page.get_by_role("button", name="Fit").click()
    # Fit shows the whole graph when its text stays legible (≥ 9 px: zoom ≥ 9/11), else the
    # current node and as much around it as that zoom allows (render/canvas.js, NOTE [fit]).
    fitted = page.evaluate("""() => { const c = window.gradtrace.app.canvas, s = c.scene;
        const w = c.host.clientWidth, h = c.host.clientHeight;
        const whole = c.cam.x * c.cam.k <= 0 && c.cam.y * c.cam.k <= 0
            && (s.width - c.cam.x) * c.cam.k <= w + 1 && (s.height - c.cam.y) * c.cam.k <= h + 1;
        const [v] = c.stepState().current;
        const sx = (s.x[v] - c.cam.x) * c.cam.k, sy = (s.y[v] - c.cam.y) * c.cam.k;
        return { whole, k: c.cam.k, current: sx >= 0 && sx <= w && sy >= 0 && sy <= h,
                 legibleWhole: Math.min(w / (s.width + 40), h / (s.height + 40)) >= 9 / 11 }; }""")
    assert fitted["k"] != pytest.approx(k0 * 1.25)
    if fitted["legibleWhole"]:
        assert fitted["whole"], fitted
    else:
        assert fitted["k"] >= 9 / 11 - 1e-9 and fitted["current"], fitted


def test_a_view_that_changes_size_is_never_blank_between_frames(playground: Any) -> None:
    """Giving a canvas a new size clears it; the frame must be drawn again before the page is
    painted, not one animation frame later (NOTE [a resize draws at once] in render/canvas.js).
    The pixels are read in a ResizeObserver callback made after the canvas's own: after its
    resize, before any later animation frame, where a notebook test once found an empty graph."""
    page = playground
    run_example(page, "recursion_tree")
    settled(page)
    seen = page.evaluate("""() => new Promise((done) => {
        const c = window.gradtrace.app.canvas, host = c.host, w0 = host.clientWidth;
        const ink = () => {
            const d = c.base.getContext('2d').getImageData(0, 0, c.base.width, c.base.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 64) {
                if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2] || d[i + 3] !== d[3]) n++;
            }
            return n;
        };
        new ResizeObserver((entries, ro) => {
            if (host.clientWidth === w0) return;
            ro.disconnect();
            done({ w0, w1: host.clientWidth, canvasW: c.base.width, ink: ink() });
        }).observe(host);
        host.style.maxWidth = `${w0 - 120}px`;
    })""")
    assert seen["w1"] < seen["w0"] and seen["canvasW"] < seen["w0"] * 2, seen
    assert seen["ink"] > 20, f"the view was blank after its size changed: {seen}"


def test_a_5000_node_graph_is_laid_out_in_the_worker_and_steps(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    doc = synthetic_document(5000, "rnn")
    RunDocument.model_validate(doc)
    timing = page.evaluate("text => window.gradtrace.loadDocument(JSON.parse(text))", json.dumps(doc))
    assert timing["nodes"] == len(doc["graph"]["nodes"])
    # Its lines come round every 20 ops with different ops each time: no loop to fold
    # (graph/groups.js, NOTE [a loop repeats itself]); every node is laid out, and each extra
    # use of a shared weight gets its own copy (graph/view.js, NOTE [per-use proxies]).
    assert timing["vnodes"] > timing["nodes"]
    assert page.evaluate("window.gradtrace.app.viewer.levels.length") == 0
    expect(page.locator("#graph-stats")).to_contain_text(f"{len(doc['graph']['nodes'])} nodes")
    expect(page.locator(".gt-minimap")).to_be_visible()
    page.get_by_role("button", name="Fit").click()
    settled(page)
    assert canvas_ink(page) > 0.01
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tl-label")).to_have_text(f"Step 1/{len(doc['events'])} · forward")
    page.screenshot(path=str(artifacts_dir / "large-graph-5000.png"))


def test_dark_theme_follows_the_system(browser: Any, live_server: Any, frontend_bundle: Path) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark")
    try:
        page = ctx.new_page()
        page.goto(live_server.url + "/")
        wait_until(page, "window.gradtrace !== undefined")
        run_code(page, "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n")
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        r, g, b = (int(v) for v in re.findall(r"\d+", bg)[:3])
        assert r + g + b < 150, bg
        pixel = page.evaluate("Array.from(document.querySelector('#graph canvas.gt-base')"
                              ".getContext('2d').getImageData(2, 2, 1, 1).data)")
        assert sum(pixel[:3]) < 150, pixel
    finally:
        ctx.close()


def test_the_page_fits_a_laptop_screen_without_sideways_scrolling(browser: Any, live_server: Any,
                                                                   frontend_bundle: Path) -> None:
    ctx = browser.new_context(viewport={"width": 1024, "height": 640})
    try:
        page = ctx.new_page()
        page.goto(live_server.url + "/")
        wait_until(page, "window.gradtrace !== undefined")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        for name in ("Run", "Share", "Fit", "Step forward"):
            box = page.get_by_role("button", name=name).first.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1024, name
        graph = page.locator("#graph").bounding_box()
        assert graph and graph["width"] > 300 and graph["height"] > 200
    finally:
        ctx.close()


def test_layout_puts_producers_above_consumers_and_never_overlaps_boxes(playground: Any) -> None:
    page = playground
    run_example(page, "recursion_tree")
    report = page.evaluate("""() => {
        const s = window.gradtrace.app.scene, { vnodes, vedges } = s.view;
        const upward = vedges.filter(e => !(s.y[e.t] > s.y[e.s])).length;
        const rows = new Map();
        vnodes.forEach((n, v) => { const k = Math.round(s.y[v]);
            if (!rows.has(k)) rows.set(k, []); rows.get(k).push([s.x[v] - n.w / 2, s.x[v] + n.w / 2]); });
        let overlaps = 0;
        for (const row of rows.values()) {
            row.sort((a, b) => a[0] - b[0]);
            for (let i = 1; i < row.length; i++) if (row[i][0] < row[i - 1][1] - 0.5) overlaps++;
        }
        return { upward, overlaps, nodes: vnodes.length };
    }""")
    assert report["nodes"] > 40
    assert report == {"upward": 0, "overlaps": 0, "nodes": report["nodes"]}


def test_a_20000_node_graph_is_drawn_without_stack_overflow(playground: Any) -> None:
    page = playground
    doc = synthetic_document(20000, "transformer")
    timing = page.evaluate("text => window.gradtrace.loadDocument(JSON.parse(text))", json.dumps(doc))
    assert timing["nodes"] == len(doc["graph"]["nodes"])
    # Its lines come round every 20 ops, but with different ops each time: no loop to fold
    # (graph/groups.js, NOTE [a loop repeats itself]), so every node is laid out and drawn.
    assert timing["vnodes"] >= timing["nodes"]
    assert page.evaluate("window.gradtrace.app.scene.layout.layers") > 1000  # a deep graph, really laid out
    page.get_by_role("button", name="Fit").click()
    settled(page)
    assert canvas_ink(page) > 0.005


def test_reduced_motion_drops_the_travelling_gradient_dots(browser: Any, live_server: Any,
                                                           frontend_bundle: Path) -> None:
    for motion, expect_dots in (("no-preference", True), ("reduce", False)):
        ctx = browser.new_context(viewport={"width": 1280, "height": 800}, reduced_motion=motion)
        try:
            page = ctx.new_page()
            page.goto(live_server.url + "/")
            wait_until(page, "window.gradtrace !== undefined")
            run_code(page, "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n")
            page.locator("#graph").focus()
            page.keyboard.press("Shift+ArrowLeft")  # start of the backward pass
            page.keyboard.press("ArrowRight")  # first backward step: gradients leave the root
            dots = page.evaluate("window.gradtrace.app.canvas.dots.length")
            assert (dots > 0) == expect_dots, (motion, dots)
        finally:
            ctx.close()


def test_the_node_list_for_keyboard_users_shows_up_when_focused(playground: Any) -> None:
    page = playground
    run_code(page, "import torch\nx = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n")
    first = page.get_by_role("list", name="Graph nodes").get_by_role("button").first
    first.focus()
    box = page.locator("#node-list").bounding_box()
    assert box and box["height"] > 20 and box["width"] > 200
    page.keyboard.press("Enter")
    expect(page.locator("#inspector h3")).to_have_text(first.inner_text().split(" — ")[0])


def test_nodes_built_by_a_backward_with_create_graph_are_drawn_in_their_own_style(playground: Any,
                                                                                  artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "double_backward")
    higher = [n for n in doc["graph"]["nodes"] if n.get("created_in_pass") is not None]
    assert higher, "the lesson's first backward (create_graph=True) recorded no node"
    page.get_by_role("button", name="Fit").click()
    # Count, inside each drawn function node's box, the pixels in the higher-order colour.
    report = page.evaluate("""() => {
        const c = window.gradtrace.app.canvas, s = c.scene, { vnodes } = s.view;
        const hex = c.pal.higher.replace('#', '');
        const want = [0, 2, 4].map(i => parseInt(hex.slice(i, i + 2), 16));
        const out = { higher: [], forward: [] };
        vnodes.forEach((n, v) => {
            if (n.kind !== 'function') return;
            c.centerOn(v); c.drawNow();
            const ctx = c.base.getContext('2d'), d = c.dpr;
            const x = (s.x[v] - n.w / 2 - c.cam.x) * c.cam.k * d;
            const y = (s.y[v] - n.h / 2 - c.cam.y) * c.cam.k * d;
            const img = ctx.getImageData(Math.round(x), Math.round(y),
                                         Math.round(n.w * c.cam.k * d), Math.round(n.h * c.cam.k * d)).data;
            let hits = 0;
            for (let i = 0; i < img.length; i += 4) {
                const dist = Math.abs(img[i] - want[0]) + Math.abs(img[i + 1] - want[1])
                    + Math.abs(img[i + 2] - want[2]);
                if (dist < 40) hits++;
            }
            (n.higher ? out.higher : out.forward).push(hits / (img.length / 4));
        });
        return out; }""")
    assert len(report["higher"]) >= 1 and report["forward"], report
    assert min(report["higher"]) > 0.03, report
    assert max(report["forward"]) < 0.01, report
    page.get_by_role("button", name="Fit").click()
    page.screenshot(path=str(artifacts_dir / "double-backward.png"))
