"""The whole-graph view (⤢) of a 6-layer transformer at 1280×800, top to bottom and left to right:
the long layout is wrapped into columns (rows) shaped like the view, so the drawing fills the
canvas's width and height instead of a 100-px strip or a 1-px line, and the modules are named
over their regions (render/wrap.js, NOTE [modules as regions] in render/draw.js)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browser.pageutil import run_code
from pageguard import wait_until
from programs import TRANSFORMER_6

FILLED = """() => { const c = window.gradtrace.app.canvas, s = c.scene; c.drawNow();
  const W = c.overlay.clientWidth, H = c.overlay.clientHeight;
  return { fw: s.width * c.cam.k / W, fh: s.height * c.cam.k / H, k: c.cam.k, columns: s.layout.columns,
    regions: c.placed.filter((p) => p.kind === 'region').map((p) => p.text),
    initials: c.placed.filter((p) => /(^|[.\\s])[a-z]\\.[a-z]\\./.test(p.text)).map((p) => p.text) }; }"""


@pytest.mark.parametrize("direction", ["TB", "LR"])
def test_the_whole_transformer_fills_the_view(playground: Any, artifacts_dir: Path, direction: str) -> None:
    page = playground
    run_code(page, TRANSFORMER_6)
    if direction == "LR":
        before = page.evaluate("window.gradtrace.app.viewer.layoutCount")
        page.select_option("#direction", "LR")
        wait_until(page, f"window.gradtrace.app.viewer.layoutCount > {before}")
    page.get_by_role("button", name="Whole graph").click()
    m = page.evaluate(FILLED)
    assert m["columns"] >= 2, m
    # the drawing spans most of the canvas along both axes (it was a strip along one)
    assert min(m["fw"], m["fh"]) >= 0.6 and max(m["fw"], m["fh"]) >= 0.75, m
    assert m["regions"], m  # modules named over their regions
    assert m["initials"] == [], m  # no undecodable initials ("e.l.0.s.i")
    page.screenshot(path=str(artifacts_dir / f"whole-transformer-{direction}.png"))
