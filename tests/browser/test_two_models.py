"""Two models in one snippet (PyTorch's visualizing-gradients tutorial: the same network with and
without batch norm, trained one after the other): the picker names the call the canvas has open,
and the other calls are folded, whichever model they belong to (NOTE [several models, one picker]
in frontend/src/graph/groups.js)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser.pageutil import run_code, settled
from pageguard import wait_until
from programs import TWO_MODELS

OPEN = """() => { const a = window.gradtrace.app, s = a.scene, nodes = a.index.nodes;
  const mods = new Set();
  s.view.vnodes.forEach((n) => { if (n.fold || n.kind === 'group') return;
    // the ops drawn open (parameters are shared by every call of their model: drawn for themselves)
    for (const r of n.refs) { const m = a.index.module[r];
      if (m && nodes[r].kind === 'function' && nodes[r].name !== 'AccumulateGrad') mods.add(m.split('.')[0]); } });
  return { mods: [...mods].sort(), folds: s.view.vnodes.filter((n) => n.fold).map((n) => n.label) }; }"""


def test_the_picker_names_the_call_the_canvas_shows(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, TWO_MODELS)
    picker = page.get_by_role("group", name="Iteration")
    assert "of 6: model_nobn call 3 of 3" in picker.inner_text(), picker.inner_text()
    shown = page.evaluate(OPEN)
    assert shown["mods"] == ["model_nobn"], shown  # only the open call's model is drawn open
    assert any("model_bn" in f for f in shown["folds"]), shown
    page.get_by_role("button", name="Previous call").click()
    page.get_by_role("button", name="Previous call").click()
    page.get_by_role("button", name="Previous call").click()
    wait_until(page, "window.gradtrace.app.viewer.openUnits[0] === 2")
    assert "of 6: model_bn call 3 of 3" in picker.inner_text(), picker.inner_text()
    settled(page)
    assert page.evaluate(OPEN)["mods"] == ["model_bn"]
    page.screenshot(path=str(artifacts_dir / "two-models.png"))
