"""The training-dynamics panel as a user meets it (frontend/src/ui/dynamics.js): a 20-step Adam
loop run through the real service; the panel opens closed, one line that leaves the graph its
height at 1280x800, and remembers being opened for the next run; clicking iteration 7 on a chart
opens iteration 7's graph; the module filter narrows the charts; hovering the timeline marks an
iteration; GRU-200's one backward pass shows ‖grad‖ by call; a 500-iteration series draws within
100 ms. Screenshots are written to the artifacts folder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from browser.pageutil import open_saved_file, run_code
from pageguard import wait_until
from programs import ADAM_ACTIVATIONS as ADAM
from programs import GRU_200

GRAPH_HEIGHT = "document.querySelector('[data-gt=graph]').clientHeight"
PANEL_HEIGHT = "document.querySelector('#dynamics').getBoundingClientRect().height"



def _open(page: Any) -> None:
    wait_until(page, "!document.querySelector('#dynamics').hidden")
    page.locator("#dynamics summary").click()
    wait_until(page, "document.querySelector('#dynamics').dataset.drawMs !== undefined")


def _click_iteration(page: Any, i: int, n: int) -> None:
    """Click iteration ``i`` (from 0) of ``n`` on the ‖grad‖ chart, where the chart draws it."""
    box = page.locator("canvas[data-gt-dyn=grad]").bounding_box()
    left, right = 46, 8  # the chart's padding (ui/dynamics-draw.js PAD)
    x = left + i / (n - 1) * (box["width"] - left - right)
    page.mouse.click(box["x"] + x, box["y"] + box["height"] / 2)


def test_clicking_iteration_7_opens_its_graph_and_the_filter_narrows(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, ADAM)
    wait_until(page, "!document.querySelector('#dynamics').hidden")
    # closed at first: one line that says what the panel holds, the graph keeping its height
    assert page.locator("#dynamics details").get_attribute("open") is None
    assert page.locator("#dynamics summary").inner_text().startswith("Dynamics: 20 steps, update ratio 1e-")
    closed_graph, closed_panel = page.evaluate(GRAPH_HEIGHT), page.evaluate(PANEL_HEIGHT)
    assert closed_panel <= 30 and closed_graph >= 300, (closed_graph, closed_panel)
    page.screenshot(path=str(artifacts_dir / "dynamics-adam-closed.png"))
    _open(page)
    assert page.evaluate(GRAPH_HEIGHT) < closed_graph  # opened, it takes its room from the graph
    page.screenshot(path=str(artifacts_dir / "dynamics-adam.png"), full_page=True)
    before = page.evaluate("window.gradtrace.app.player.k")
    _click_iteration(page, 6, 20)
    wait_until(page, f"window.gradtrace.app.player.k !== {before}")
    wait_until(page, "document.querySelector('.gt-iter-n') && document.querySelector('.gt-iter-n').value === '7'")
    k = page.evaluate("window.gradtrace.app.player.k")
    seg = page.evaluate("""(k) => window.gradtrace.app.timeline.segments
        .find(s => s.phase === 'backward' && s.pass === 6).end""", k)
    assert k == seg  # the end of iteration 7's backward pass
    assert "iteration 7 of 20" in page.locator("[data-gt-dyn=info]").inner_text()
    page.screenshot(path=str(artifacts_dir / "dynamics-adam-iteration-7.png"), full_page=True)
    # the module filter narrows the charts to model.2's two parameters and its layers
    legend = page.locator("[data-gt-dyn=legend] .gt-dyn-key")
    layers = page.evaluate("window.gradtrace.app.doc.analysis.dynamics.layers.map(l => l.kind)")
    assert layers == ["relu", "tanh"]  # read from the run's tensor file by the web process
    assert legend.count() == 6 + len(layers)
    page.locator("[data-gt-dyn=filter]").select_option("model.2")
    wait_until(page, "document.querySelectorAll('[data-gt-dyn=legend] .gt-dyn-key').length === 2")
    assert legend.all_inner_texts() == ["model.2.weight", "model.2.bias"]
    assert "2 of 6 parameters" in page.locator("[data-gt-dyn=info]").inner_text()
    page.locator("[data-gt-dyn=range]").select_option("recent")
    page.locator("#dynamics").screenshot(path=str(artifacts_dir / "dynamics-adam-filtered.png"))
    # hovering the timeline's scrubber marks that iteration on the charts
    scrub = page.locator("#tl-scrub").bounding_box()
    page.mouse.move(scrub["x"] + scrub["width"] * 0.02, scrub["y"] + scrub["height"] / 2)
    wait_until(page, "document.querySelector('[data-gt-dyn=info]').innerText.includes('iteration 1 of 20')")


def test_gru_200s_one_pass_shows_its_gradient_by_call_and_the_open_panel_is_remembered(
        playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, ADAM)
    _open(page)  # the person opens the panel once ...
    run_code(page, GRU_200)  # ... and the next run's panel is open too (the view state's dynamicsOpen)
    wait_until(page, "document.querySelector('#dynamics summary').innerText.includes('200 calls of cell')")
    assert page.locator("#dynamics details").get_attribute("open") is not None
    summary = page.locator("#dynamics summary").inner_text()
    assert summary.startswith("Dynamics: 200 calls of cell, ‖grad‖ 1e-42..4") and summary.endswith("1 hint"), summary
    assert page.locator("canvas[data-gt-dyn=calls]").is_visible()
    for chart in ("grad", "update", "act", "loss", "flow"):  # one backward pass: no series by iteration
        assert page.locator(f"canvas[data-gt-dyn={chart}]").is_hidden()
    calls = page.evaluate("window.gradtrace.app.doc.analysis.dynamics.calls")
    assert [(c["module"], len(c["grad_norm"])) for c in calls] == [("cell", 200)]
    page.locator("canvas[data-gt-dyn=calls]").scroll_into_view_if_needed()
    box = page.locator("canvas[data-gt-dyn=calls]").bounding_box()
    page.mouse.move(box["x"] + 46 + 50 / 199 * (box["width"] - 46 - 8), box["y"] + box["height"] / 2)  # call 51
    wait_until(page, "document.querySelector('[data-gt-dyn=info]').innerText.includes('call 51')")
    hint = page.locator("#findings .gt-finding[data-code='gradients-vanish']")
    assert "200 calls of cell" in hint.inner_text()
    page.screenshot(path=str(artifacts_dir / "dynamics-gru-200-calls.png"))
    page.locator("#dynamics").screenshot(path=str(artifacts_dir / "dynamics-gru-200-panel.png"))
    page.locator("#dynamics summary").click()  # closed again: one line, and the graph has its room back
    wait_until(page, "document.querySelector('#dynamics').getBoundingClientRect().height <= 30")


def test_a_500_iteration_series_draws_within_100_ms(playground: Any) -> None:
    page = playground
    run_code(page, ADAM)
    _open(page)
    ms = page.evaluate("""() => {
        const p = window.gradtrace.app.viewer.panels.dynamics.panel, d = p.dyn, n = 500;
        const long = (s) => Array.from({length: n}, (_, i) => s[i % s.length]);
        const params = Array.from({length: 12}, (_, k) => ({...d.params[k % d.params.length],
            grad_norm: long(d.params[k % d.params.length].grad_norm), grad_mean: long(d.params[0].grad_mean),
            grad_max: long(d.params[0].grad_max), update: long(d.params[k % d.params.length].update)}));
        p.dyn = {...d, iterations: Array.from({length: n}, (_, i) => i), loss: long(d.loss), params,
                 layers: d.layers.map(l => ({...l, share: long(l.share), nodes: long(l.nodes)}))};
        p.ends = p.dyn.iterations.map(i => i);
        p.draw();
        const times = [1, 2, 3].map(() => p.draw());
        return Math.min(...times);
    }""")
    print(f"500-iteration dynamics panel draw: {ms:.1f} ms")
    assert ms <= 100


def test_the_saved_html_of_a_recorded_loop_has_the_panel_with_its_activation_shares(
        browser: Any, tmp_path: Path, artifacts_dir: Path) -> None:
    """``record()`` keeps the tensors in process, so its document has every series, the ReLU's
    dead share and the tanh's saturation included; the saved file draws them offline."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    import gradtrace

    torch.manual_seed(0)
    with gradtrace.record() as rec:
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(32, 6), torch.randn(32, 1)
        for _ in range(20):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    doc = rec.document()
    assert [layer.kind for layer in doc.analysis.dynamics.layers] == ["relu", "tanh"]
    path = doc.save_html(str(tmp_path / "dynamics.html"))
    with open_saved_file(browser, Path(path)) as saved:
        page = saved.page
        root = page.locator("#gradtrace")
        root.locator("[data-gt=dynamics] summary").click()
        expect(root.locator("[data-gt=dynamics]")).to_have_attribute("data-draw-ms", re.compile(r"^\d"))
        legend = root.locator("[data-gt-dyn=legend] .gt-dyn-key").all_inner_texts()
        assert legend[-2:] == ["relu model.1", "tanh model.3"]
        root.locator("[data-gt=dynamics]").screenshot(path=str(artifacts_dir / "dynamics-saved-html.png"))
        for chart in ("act", "flow"):  # below the fold of the panel: each chart on its own
            root.locator(f"canvas[data-gt-dyn={chart}]").screenshot(
                path=str(artifacts_dir / f"dynamics-saved-html-{chart}.png"))
        assert saved.errors == []
    assert torch.is_grad_enabled()
