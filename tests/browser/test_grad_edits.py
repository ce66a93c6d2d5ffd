"""What the run did to ``.grad`` outside autograd, as the page says it: after clipping, the last
step's sentence, the box and the inspector give the same (clipped) gradient, and the lines that
clipped or cleared ``.grad`` say so when clicked (frontend/src/analysis/grad-edits.js)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from browser.pageutil import pick_node, run_code
from pageguard import wait_until
from programs import CLIP_LOOP


def test_after_clipping_the_last_step_agrees_with_the_box(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, CLIP_LOOP)
    page.locator("#graph").focus()
    page.keyboard.press("End")
    sentence = page.locator("#sentence").inner_text()
    leaf = re.search(r"AccumulateGrad \w+ ([\w.]+)\.grad", sentence)
    assert leaf, sentence
    assert "After backward, line 11 changed it outside autograd to " in sentence, sentence
    pick_node(page, re.compile("^" + re.escape(leaf.group(1)) + " "))
    wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
    # the sections below the tensors come once the first is drawn (NOTE [the looked-at tensor first] in ui/tensors.js)
    wait_until(page, "document.querySelector('#inspector').innerText.includes('.grad at this step (')")
    inspector = page.locator("#inspector").inner_text()
    norm = re.search(r"\.grad at this step \(.*then norm scaled × [\d.]+ outside autograd at line 11\)"
                     r"\n.*\n.*\n.*norm ([\d.e+-]+)", inspector)
    assert norm, inspector
    # the sentence names the value the inspector shows (4 significant digits, ‖v‖)
    assert f"‖{float(norm.group(1)):.4g}‖" in sentence, (norm.group(1), sentence)
    page.screenshot(path=str(artifacts_dir / "clipping-last-step.png"))


def test_the_clipping_and_zeroing_lines_say_what_they_did(playground: Any) -> None:
    page = playground
    run_code(page, CLIP_LOOP)
    page.locator(".cm-line").nth(10).click(position={"x": 4, "y": 4})  # line 11: clip_grad_norm_
    wait_until(page, "document.querySelector('#inspector').innerText.includes('Line 11')")
    text = page.locator("#inspector").inner_text()
    assert "changed .grad outside autograd" in text and "model.0.weight.grad" in text, text
    page.locator(".cm-line").nth(7).click(position={"x": 4, "y": 4})  # line 8: opt.zero_grad()
    wait_until(page, "document.querySelector('#inspector').innerText.includes('Line 8')")
    text = page.locator("#inspector").inner_text()
    assert "set to None" in text and "between accumulations" in text, text
