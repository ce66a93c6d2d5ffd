"""The walking skeleton, as a user does it: pick the chain-rule lesson, run it, see
the graph's nodes drawn and x's gradient, 7 (= 2x + 3 at x = 2)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from browser.pageutil import canvas_ink, node_texts, ready_generation, wait_drawn
from gradtrace.lessons import lesson

pytestmark = pytest.mark.browser


def test_chain_rule_example_runs_and_shows_nodes_and_x_grad_7(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(lesson("chain_rule").title))).click()
    assert "x = torch.tensor(2.0, requires_grad=True)" in page.locator(".cm-content").inner_text()
    assert canvas_ink(page) < 0.01  # nothing drawn before the run

    before = ready_generation(page)
    page.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    wait_drawn(page, before)

    texts = node_texts(page)
    names = [t.split(" — ")[0] for t in texts]
    assert names.count("MulBackward0") == 2
    assert names.count("AddBackward0") == 2
    assert names.count("AccumulateGrad") == 1
    (x_item,) = [t for t in texts if t.startswith("x — ")]
    assert re.search(r"grad 7(\.0*)?$", x_item), x_item
    assert canvas_ink(page) > 0.02  # the graph is really drawn on the canvas
    assert page.locator("#status-badge").inner_text() == "ok"
    assert "tensor(7.)" in page.locator("#stdout").inner_text()
    page.screenshot(path=str(artifacts_dir / "skeleton-chain-rule.png"))
