"""The gradient check on the page: run the wrong Cube, click Check, see the verdict, the grid
with the worst element selected, and the Cube node outlined as the suspect."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import node_texts, run_code, run_example
from gradcheck.cube import WRONG_CUBE

pytestmark = pytest.mark.browser


def test_check_the_wrong_cube_shows_fail_the_grid_and_the_outlined_cube(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, WRONG_CUBE)
    doc = page.evaluate("window.gradtrace.app.doc")
    cube_ref = next(i for i, n in enumerate(doc["graph"]["nodes"]) if n["name"] == "CubeBackward")
    # The user's own Function is marked as their code on the graph.
    assert any(t.startswith("CubeBackward") for t in node_texts(page))
    page.get_by_role("button", name="Fit").click()
    x, y = page.evaluate("""() => {
        const c = window.gradtrace.app.canvas, s = c.scene;
        const v = s.view.vnodes.findIndex(n => n.label === 'CubeBackward');
        const r = c.overlay.getBoundingClientRect();
        return [r.left + (s.x[v] - c.cam.x) * c.cam.k, r.top + (s.y[v] - c.cam.y) * c.cam.k]; }""")
    page.mouse.click(x, y)  # on the Cube's node, as a user does
    expect(page.locator("#inspector h3").first).to_have_text("CubeBackward")
    check = page.locator('[data-gt="check"]')
    expect(check).to_have_text("Check gradient of Cube's inputs numerically")
    check.click()
    expect(page.locator('[data-gt="verdict"]')).to_have_text("fail", timeout=30_000)
    grid = page.locator('[data-gt="check-grid"]')
    expect(grid.locator("tr")).to_have_count(3)  # the header and the two elements of x
    worst = grid.locator('tr[aria-selected="true"]')
    expect(worst).to_have_count(1)
    expect(worst.locator("td").nth(1)).to_have_text("1")  # analytic: x**2 at x = 1
    expect(worst.locator("td").nth(2)).to_have_text("3")  # numeric: 3 x**2
    expect(page.locator('[data-gt="check-detail"]')).to_contain_text(re.compile(r"x\[\d\]: analytic 1 · numeric 3 "))
    expect(page.locator(".gt-check-suspect")).to_contain_text("Suspect: CubeBackward (a Function your code defines)")
    # the grid fits the inspector (no "rel e" cut by a sideways scroll), each reason said once
    scroll = page.locator(".gt-check-scroll")
    assert scroll.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the grid overflows the inspector"
    for reason in page.locator(".gt-check-reasons li").all_inner_texts():
        first = reason.split()[0]
        assert not reason.startswith(f"{first} {first}"), reason
    suspect = page.evaluate("window.gradtrace.app.scene.suspectV")
    assert suspect, "the suspect is outlined on the graph"
    assert page.evaluate(f"window.gradtrace.app.scene.view.vnodes[{suspect[0]}].refs[0]") == cube_ref
    page.screenshot(path=str(artifacts_dir / "gradcheck-wrong-cube.png"))


def test_the_backward_of_a_custom_function_is_highlighted_while_it_runs(playground: Any) -> None:
    page = playground
    run_code(page, WRONG_CUBE)
    steps = page.evaluate("""() => { const app = window.gradtrace.app, tl = app.timeline;
      const out = []; for (let k = 1; k <= tl.N; k++) { const ev = tl.event(k);
        if (ev.phase === 'backward' && app.index.nodes[tl.evNode[k - 1]].name === 'CubeBackward') out.push(k); }
      return out; }""")
    assert steps
    page.evaluate(f"window.gradtrace.app.player.go({steps[0]}, {{fromUser: true}})")
    lines = page.locator(".cm-line.gt-line-user-backward")
    expect(lines).to_have_count(3)  # def backward, its two lines
    expect(lines.first).to_contain_text("def backward(ctx, grad):")


def test_check_every_parameter_of_lesson_04_from_a_parameter(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "mlp_loss")
    page.evaluate("""() => { const app = window.gradtrace.app;
        const v = app.scene.view.vnodes.findIndex(n => n.label === 'model.0.weight'); app.viewer.selectNode(v); }""")
    page.locator('[data-gt="check-every"]').click()
    expect(page.locator('[data-gt="verdict"]')).to_have_text("pass", timeout=30_000)
    rows = page.locator('[data-gt="check-grid"] tr')
    expect(rows.nth(1)).to_be_visible()
    # The header and 58 elements; on a loaded machine the check may take fewer so that its re-runs
    # fit the time limit (engine.py), and then the page must say so among the reasons.
    if rows.count() != 59:
        assert 2 <= rows.count() < 59
        expect(page.locator(".gt-check-reasons")).to_contain_text(f"{rows.count() - 1} of 58 elements checked")
    assert page.evaluate("window.gradtrace.app.scene.suspectV") == []
    page.screenshot(path=str(artifacts_dir / "gradcheck-lesson-04-pass.png"))


LOOP = """import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = (w.sin() * w).sum()
    loss.backward()
    opt.step()
"""


def test_the_check_chooses_the_pass_on_screen_and_says_which_it_checked(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, LOOP)
    k = page.evaluate("""() => { const tl = window.gradtrace.app.timeline;
      for (let k = 1; k <= tl.N; k++) if (tl.evPass[k - 1] === 2) return k; return -1; }""")
    assert k > 0
    page.evaluate(f"window.gradtrace.app.player.go({k}, {{fromUser: true}})")
    page.evaluate("""() => { const app = window.gradtrace.app;
        const v = app.scene.view.vnodes.findIndex(n => n.label === 'w'); app.viewer.selectNode(v); }""")
    chooser = page.locator('[data-gt="check-pass"]')
    expect(chooser).to_have_value("2")  # the pass on screen
    expect(chooser.locator("option")).to_have_count(4)
    expect(chooser.locator("option").nth(3)).to_have_text("backward 4 · line 8 · iteration 4")
    chooser.select_option("3")
    page.locator('[data-gt="check"]').click()
    expect(page.locator('[data-gt="verdict"]')).to_have_text("pass", timeout=30_000)
    expect(page.locator('[data-gt="check-pass-line"]')).to_have_text("checked backward 4 of 4 (line 8, iteration 4)")
    page.screenshot(path=str(artifacts_dir / "gradcheck-chosen-pass.png"))
