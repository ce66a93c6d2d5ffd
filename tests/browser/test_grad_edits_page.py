"""A GradScaler loop in the real page: the leaf's inspector lists each unscale after the
accumulation it changed, with its line and effect, and shows torch's final .grad (NOTE [gradient
edits] in backend/gradtrace/capture/gradedits.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from browser.pageutil import pick_node, run_code

AMP = """\
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(3):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
print(round(model[0].bias.grad[0].item(), 4))
"""


def test_unscale_edits_are_listed_in_the_leaf_history(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, AMP)
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc["status"] == "ok"
    page.locator("#graph").focus()
    page.keyboard.press("End")
    pick_node(page, re.compile("^model\\.0\\.bias"))
    edits = page.locator("#inspector .gt-history .gt-edit")
    edits.first.wait_for()  # the inspector draws the chosen node in a task of its own
    assert edits.count() == 3
    for i in range(3):
        text = edits.nth(i).inner_text()
        assert re.search(r"changed in place at line 13 \(norm × 1\.53e-5\)", text), text
    assert "edited 3 times" in page.locator("#inspector").inner_text()
    # the value at the end is torch's, printed by the program
    printed = float(doc["stdout"].strip())
    (bias,) = [n for n in doc["graph"]["nodes"] if n.get("name") == "model.0.bias"]
    assert abs(bias["grad"]["values"][0] - printed) < 1e-4
    page.locator("#inspector .gt-history").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "grad-edits-amp.png"))
