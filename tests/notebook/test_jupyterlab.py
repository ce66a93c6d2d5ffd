"""The widget in a real JupyterLab, driven through Debian's Chromium like a user would.

One lab, one kernel, one notebook: load the extension, run a ``%%gradtrace`` cell, see the
nodes drawn, step with the keyboard, click a node, and read ``w.selected`` and ``w.step`` in
the next cell; then set ``w.step`` from Python and see the view move. About 25 s on two cores
(the lab's start and the kernel's first torch import dominate).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notebook.labutil import DIALOG, Lab, answer_lab_dialogs, cell_output, run_cell, write_notebook
from pageguard import expect_console_error, wait_until
from programs import ADAM_ACTIVATIONS

pytestmark = pytest.mark.browser

CELL_RECORD = """%%gradtrace w
import torch
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x * x + 3 * x).sum()
y.backward()
"""
CELL_READ = "sel = w.selected\nprint('SEL', sel.name, sel.kind, sel.line, w.step, sel.grad.tolist())"
WIDGET = ".gradtrace-widget"


def click_node(page: Any, which: str) -> None:
    """Click, with the mouse, where the widget draws the first node for which the JS test holds."""
    point = page.evaluate(f"""() => {{
        const v = document.querySelector('{WIDGET}').gradtrace;
        const i = v.index.nodes.findIndex((n) => {which});
        const vn = v.scene.view.byRef[i][0];
        v.canvas.centerOn(vn);
        v.canvas.drawNow();
        const r = v.canvas.host.getBoundingClientRect(), cam = v.canvas.cam;
        return {{ x: r.left + (v.scene.x[vn] - cam.x) * cam.k, y: r.top + (v.scene.y[vn] - cam.y) * cam.k }};
    }}""")
    page.mouse.click(point["x"], point["y"])


ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def open_widget_notebook(page: Any, lab: Lab, name: str, cells: list[str]) -> None:
    """Write ``name``.ipynb with ``cells`` (the first loads the extension, the second records
    into the widget ``w``), open it in a workspace of its own (the lab does not reopen another
    test's notebook beside it), run those two cells and wait for the widget to be drawn."""
    write_notebook(lab.root / f"{name}.ipynb", ["%load_ext gradtrace", *cells])
    page.set_default_timeout(60_000)
    page.goto(f"{lab.url}/lab/workspaces/{name}/tree/{name}.ipynb?token={lab.token}")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=90_000)
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, f"document.querySelector('{WIDGET}')?.dataset.ready === '1'", timeout=30_000)


@pytest.fixture()
def lab_page(page: Any, jupyterlab: Lab) -> Iterator[Any]:
    """The page; afterwards a screenshot and the lab's log are left in tests/artifacts/."""
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"{m.type}: {m.text}"))
    page.answered_dialogs = answer_lab_dialogs(page)  # NOTE [a lab with no dialogs] (labutil.py)
    # JupyterLab asks each new kernel for its debugger state; a test that ends (the page
    # closes) before a loaded machine's kernel answers makes Lab log that it cancelled the
    # request: Lab's own bookkeeping, not the page's or gradtrace's
    expect_console_error(page, r"Could not restore the debugger state: Canceled future for debug_request message")
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "jupyterlab.png"))
    (ARTIFACTS / "jupyterlab.log").write_text(jupyterlab.log() + "\n--- console\n" + "\n".join(messages))


def test_gradtrace_cell_magic_in_jupyterlab(jupyterlab: Lab, lab_page: Any) -> None:
    page = lab_page
    write_notebook(jupyterlab.root / "lesson.ipynb",
                   ["%load_ext gradtrace", CELL_RECORD, CELL_READ, "w.step = 1"])
    page.set_default_timeout(60_000)
    page.goto(f"{jupyterlab.url}/lab/tree/lesson.ipynb?token={jupyterlab.token}")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=90_000)

    run_cell(page, 0)
    run_cell(page, 1)
    host = page.locator(WIDGET)
    wait_until(page, f"document.querySelector('{WIDGET}')?.dataset.ready === '1'", timeout=30_000)

    # The nodes are drawn: the scene holds the recorded graph and the canvas has ink on it.
    drawn = page.evaluate(f"""() => {{
        const v = document.querySelector('{WIDGET}').gradtrace;
        const c = v.canvas.base, ctx = c.getContext('2d');
        const px = ctx.getImageData(0, 0, c.width, c.height).data;
        const bg = px.slice(0, 4).join();
        let ink = 0;
        for (let i = 0; i < px.length; i += 4 * 97) if (px.slice(i, i + 4).join() !== bg) ink++;
        const x = v.index.nodes.find((n) => n.name === 'x');
        const names = v.index.nodes.map((n) => n.name);
        return {{ nodes: names.length, names, ink, N: v.timeline.N, xLine: x.line }};
    }}""")
    assert drawn["nodes"] >= 5 and "x" in drawn["names"] and "MulBackward0" in drawn["names"]
    assert drawn["ink"] > 50, "the graph canvas is blank"
    # Styled by the viewer's CSS, adopted by its shadow root (NOTE [styles under the policy] in
    # backend/gradtrace/api/security.py): no <style> element, the page's layout.
    styled = page.evaluate(f"""() => {{ const root = document.querySelector('{WIDGET}').shadowRoot;
        return [root.adoptedStyleSheets.length, root.querySelectorAll('style').length,
                getComputedStyle(root.querySelector('.gt-viewer')).display]; }}""")
    assert styled[0] >= 1 and styled[1] == 0 and styled[2] == "flex", styled
    label = host.locator("#tl-label")
    assert label.inner_text().startswith(f"Step {drawn['N']}/{drawn['N']}")

    # Step with the keyboard (the keys belong to the graph, not to the notebook).
    host.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert label.inner_text().startswith(f"Step 3/{drawn['N']}")
    assert page.locator(".jp-Notebook .jp-Cell").count() == 4, "the arrows must not act on the notebook"

    # Click the leaf x where it is drawn.
    page.keyboard.press("End")
    click_node(page, "n.name === 'x' && n.kind === 'tensor'")
    host.locator("#inspector-body h3", has_text="x").wait_for()

    run_cell(page, 2)
    text = cell_output(page, 2, "SEL")
    n = drawn["N"]
    # x.grad = 2x + 3, read back as a torch tensor; the line is the cell's (the magic line excluded)
    assert 2 <= drawn["xLine"] <= 3
    assert f"SEL x tensor {drawn['xLine']} {n} [5.0, 7.0, 9.0]" in text, text

    # Setting the step from Python moves the view.
    run_cell(page, 3)
    wait_until(page, f"document.querySelector('{WIDGET}').gradtrace.player.k === 1")
    assert label.inner_text().startswith(f"Step 1/{n}")

    # "Explain this node" asks the kernel (GradtraceWidget.explain) and shows its answer.
    page.evaluate(f"""() => {{ const v = document.querySelector('{WIDGET}').gradtrace;
        v.selectById(v.index.nodes.find((n) => n.name === 'MulBackward0').id); }}""")
    instance = host.locator("[data-gt=explain-instance]").first
    instance.wait_for()
    assert host.locator(".gt-explain-rule").first.inner_text().startswith("grad_self = grad_out")
    assert " = " in instance.inner_text()
    assert page.page_errors == [], page.page_errors


# The README's cell (README.md, "In a notebook"); its run in the lab is the README's screenshot.
CELL_README = """%%gradtrace w
import torch, torch.nn as nn
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
loss = net(torch.randn(2, 4)).pow(2).mean()
loss.backward()
"""

# Every text the widget's graph canvas draws, with its size on screen in CSS px.
TEXT_SIZES = f"""() => {{
    const v = document.querySelector('{WIDGET}').gradtrace, base = v.canvas.base;
    const proto = CanvasRenderingContext2D.prototype, orig = proto.fillText, out = [];
    proto.fillText = function (text, x, y, maxWidth) {{
      if (this.canvas === base) {{
        const m = this.getTransform();
        out.push([String(text), parseFloat(/([\\d.]+)px/.exec(this.font)[1]) * Math.hypot(m.a, m.b) / v.canvas.dpr]);
      }}
      return orig.call(this, text, x, y, maxWidth);
    }};
    try {{ v.canvas.drawNow(); }} finally {{ proto.fillText = orig; }}
    return out;
}}"""


def test_readme_cell_in_jupyterlab_is_legible_and_the_lab_stays_offline(jupyterlab: Lab, lab_page: Any) -> None:
    """The README's example in the lab: every label on the widget's canvas is at least 9 px (the
    page's label placer), and the lab never offers to fetch Jupyter news (it runs offline).
    Leaves ``tests/artifacts/notebook-widget.png``, the README's screenshot."""
    page = lab_page
    page.set_viewport_size({"width": 1500, "height": 1000})
    write_notebook(jupyterlab.root / "readme.ipynb", ["%load_ext gradtrace", CELL_README])
    page.set_default_timeout(60_000)
    # A workspace of its own: the lab does not reopen the other test's notebook beside it.
    page.goto(f"{jupyterlab.url}/lab/workspaces/readme/tree/readme.ipynb?token={jupyterlab.token}")
    config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    assert config["news"]["disabled"] is True, config.get("news")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=90_000)
    # The file browser folds away (a click on its open tab): the notebook gets the window's width.
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()
    run_cell(page, 0)
    run_cell(page, 1)
    wait_until(page, f"document.querySelector('{WIDGET}')?.dataset.ready === '1'", timeout=30_000)
    host = page.locator(WIDGET)
    host.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(16):
        page.keyboard.press("ArrowRight")
    assert host.locator("#tl-label").inner_text().startswith("Step 16/")
    click_node(page, "n.name === 'AddmmBackward0' && n.module === 'net.0'")
    host.locator("#inspector-body h3", has_text="AddmmBackward0").wait_for()
    host.locator("#fit").click()
    page.mouse.move(5, 5)
    page.wait_for_timeout(300)
    fills = page.evaluate(f"""() => {{ const k = document.querySelector('{WIDGET}').gradtrace.canvas.pal.kinds;
        return [k.function.fill, k.acc.fill, k.leaf.fill]; }}""")
    assert "#eee" not in fills, f"the widget lost the page's palette (CSS variables): {fills}"
    texts = page.evaluate(TEXT_SIZES)
    assert len(texts) >= 10, texts
    small = [t for t in texts if t[1] < 9]
    assert not small, f"text drawn below 9 px in the widget: {small[:5]}"
    page.wait_for_timeout(1500)  # a toast would be up by now
    assert page.get_by_text("official Jupyter news").count() == 0, "the lab asks about fetching news"
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1).bounding_box()
    assert cell is not None
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook-widget.png"),
                    clip={"x": cell["x"], "y": cell["y"], "width": min(cell["width"], 1402), "height": cell["height"]})
    assert page.page_errors == [], page.page_errors


def test_a_dialog_the_lab_still_shows_is_answered_and_the_cell_runs(jupyterlab: Lab, lab_page: Any) -> None:
    """A notebook whose kernel is not installed makes the lab ask which kernel to start: the
    handler (NOTE [a lab with no dialogs]) takes the preselected one and the cell runs."""
    page = lab_page
    nb = jupyterlab.root / "orphan.ipynb"
    write_notebook(nb, ["print('ran', 6 * 7)"])
    text = nb.read_text().replace('"name": "python3"', '"name": "no-such-kernel"')
    nb.write_text(text.replace('"display_name": "Python 3"', '"display_name": "Gone"'))
    page.set_default_timeout(60_000)
    page.goto(f"{jupyterlab.url}/lab/workspaces/orphan/tree/orphan.ipynb?token={jupyterlab.token}")
    page.locator(".jp-Notebook .jp-Cell .cm-content").first.wait_for()
    # the lab asks (on a busy machine possibly after it started a kernel); the next click
    # meets the dialog and the handler answers it first. The handler may also have answered it
    # already (it runs before any action the dialog blocks), so wait for either.
    deadline = time.monotonic() + 90
    while not (page.locator(DIALOG).first.is_visible()
               or any("kernel" in t.lower() for t in page.answered_dialogs)):
        assert time.monotonic() < deadline, f"no kernel dialog in 90 s; answered: {page.answered_dialogs}"
        page.wait_for_timeout(250)
    run_cell(page, 0)
    assert "ran 42" in cell_output(page, 0, "ran")
    assert any("kernel" in t.lower() for t in page.answered_dialogs), page.answered_dialogs


CELL_TENSORS = """%%gradtrace w
import torch
torch.manual_seed(0)
a = torch.randn(12, 12, requires_grad=True)
(a.sin() * 3).sum().backward()
"""


def test_the_widget_asks_its_kernel_for_a_tensor(jupyterlab: Lab, lab_page: Any) -> None:
    """The widget's inspector shows SinBackward0's output as a heatmap: the numbers come from
    the kernel (one message per tensor, its bytes in the buffer), and the hovered element is
    the one the kernel computes. Leaves tests/artifacts/notebook-widget-tensor.png."""
    page = lab_page
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_widget_notebook(page, jupyterlab, "tensors",
                         [CELL_TENSORS, "print('VAL', repr(a.detach().sin()[7, 3].item()))"])
    page.evaluate(f"""() => {{ const v = document.querySelector('{WIDGET}').gradtrace;
        v.selectById(v.index.nodes.find((n) => n.name === 'SinBackward0').id); }}""")
    host = page.locator(WIDGET)
    item = host.locator("[data-gt=tensor]", has_text="output, as the op returned it")
    item.wait_for()
    wait_until(page, f"""document.querySelector('{WIDGET}').shadowRoot
        .querySelector('[data-gt=tensor][data-key$=".out0"]')?.dataset.ready === '1'""", timeout=30_000)
    canvas = item.locator("[data-gt=tensor-heatmap]")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 3.5 * box["width"] / 12, box["y"] + 7.5 * box["height"] / 12)
    hover = item.locator("[data-gt=tensor-hover]")
    wait_until(page, f"""document.querySelector('{WIDGET}').shadowRoot
        .querySelector('[data-gt=tensor][data-key$=".out0"] [data-gt=tensor-hover]').dataset.index === '7,3'""")
    run_cell(page, 2)
    import re

    import numpy as np

    value = float(re.search(r"VAL ([-+\d.e]+)", cell_output(page, 2, "VAL")).group(1))  # type: ignore[union-attr]
    assert np.float32(hover.get_attribute("data-value")) == np.float32(value)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook-widget-tensor.png"))
    assert page.page_errors == [], page.page_errors


# the page's dynamics program (tests/programs.py), 8 steps
CELL_LOOP = "%%gradtrace w\n" + ADAM_ACTIVATIONS.replace("range(20)", "range(8)")


def test_the_widget_shows_a_loops_dynamics_and_a_click_moves_the_kernels_step(jupyterlab: Lab, lab_page: Any) -> None:
    """The dynamics panel in the widget: an 8-step Adam loop's series drawn in the notebook,
    its parameters named by the module tree, and clicking iteration 4 on the ‖grad‖ chart
    moves the view to the end of that iteration's backward pass, which ``w.step`` reads back
    in the kernel. Leaves tests/artifacts/notebook-widget-dynamics.png."""
    page = lab_page
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_widget_notebook(page, jupyterlab, "loop", [CELL_LOOP, "print('STEP', w.step)"])
    host = page.locator(WIDGET)
    panel = host.locator("[data-gt=dynamics]")
    summary = panel.locator("summary")
    summary.wait_for()
    assert summary.inner_text().startswith("Dynamics: 8 steps, update ratio 1e-"), summary.inner_text()
    summary.click()
    wait_until(page, f"""document.querySelector('{WIDGET}').shadowRoot
        .querySelector('[data-gt=dynamics]').dataset.drawMs !== undefined""")
    legend = panel.locator("[data-gt-dyn=legend] .gt-dyn-key").all_inner_texts()
    assert legend[:2] == ["model.0.weight", "model.0.bias"] and legend[-2:] == ["relu model.1", "tanh model.3"], legend
    # opened, the panel has room of its own (NOTE [the widget grows for its dynamics] in
    # frontend/src/widget/viewer.css), not a sliver of the widget's fixed height
    room = page.evaluate(f"""document.querySelector('{WIDGET}').shadowRoot
        .querySelector('[data-gt=dynamics]').getBoundingClientRect().height""")
    assert room >= 300, room
    chart = panel.locator("canvas[data-gt-dyn=grad]")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    assert box["height"] >= 100, box
    before = page.evaluate(f"document.querySelector('{WIDGET}').gradtrace.player.k")
    left, right = 46, 8  # the chart's padding (ui/dynamics-draw.js PAD)
    page.mouse.click(box["x"] + left + 3 / 7 * (box["width"] - left - right), box["y"] + box["height"] / 2)
    wait_until(page, f"document.querySelector('{WIDGET}').gradtrace.player.k !== {before}")
    end = page.evaluate(f"""() => document.querySelector('{WIDGET}').gradtrace.timeline.segments
        .find((s) => s.phase === 'backward' && s.pass === 3).end""")
    assert page.evaluate(f"document.querySelector('{WIDGET}').gradtrace.player.k") == end
    assert "iteration 4 of 8" in panel.locator("[data-gt-dyn=info]").inner_text()
    run_cell(page, 2)
    assert f"STEP {end}" in cell_output(page, 2, "STEP")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook-widget-dynamics.png"))
    panel.screenshot(path=str(ARTIFACTS / "notebook-widget-dynamics-panel.png"))
    assert page.page_errors == [], page.page_errors
