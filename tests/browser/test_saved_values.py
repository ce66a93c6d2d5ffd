"""Saved tensors show their values in the inspector: the Cube custom Function's
``ctx.saved_tensors`` and the saved tensors of lesson 04's built-in nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import run_code, run_example
from gradcheck.cube import WRONG_CUBE

pytestmark = pytest.mark.browser

_SELECT = """(name) => { const app = window.gradtrace.app, nodes = app.index.nodes;
    const v = app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 &&
      (name ? nodes[n.refs[0]].name === name : (nodes[n.refs[0]].saved || []).some(s => s.value)));
    app.viewer.selectNode(v); return nodes[app.scene.view.vnodes[v].refs[0]]; }"""


def test_the_cubes_saved_input_shows_its_values(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, WRONG_CUBE)
    node = page.evaluate(_SELECT, "CubeBackward")
    assert node["saved"][0]["value"]["values"] == [1, 2]
    expect(page.locator("#inspector h3").first).to_have_text("CubeBackward")
    block = page.locator("#inspector .gt-tensor", has_text="saved_tensors[0], as saved for backward")
    expect(block).to_have_count(1)
    expect(block.locator("pre")).to_contain_text("1")
    expect(block.locator("pre")).to_contain_text("2")
    page.screenshot(path=str(artifacts_dir / "saved-values-cube.png"))


def test_lesson_04s_saved_tensors_show_their_values(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "mlp_loss")
    node = page.evaluate(_SELECT, None)
    with_values = [s for s in node["saved"] if s.get("value")]
    assert with_values
    expect(page.locator("#inspector .gt-tensor", has_text=", as saved for backward")).to_have_count(len(with_values))
    page.screenshot(path=str(artifacts_dir / "saved-values-lesson-04.png"))
