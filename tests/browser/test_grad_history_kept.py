"""A clipped ``.grad`` that a second backward accumulates into, in the real page: every entry
of the leaf's ``.grad`` history and its edit is in the run's tensor file (NOTE [held gradients
copied before a write] in backend/gradtrace/capture/cxx/tap.h), the service lists them, and the
inspector reads the last one from the file; nothing is left out as changed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from browser.pageutil import pick_node, run_code

CLIP_THEN_AGAIN = """\
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.randn(16, 4)
model(x).pow(2).mean().mul(50).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
model(x).pow(2).mean().mul(50).backward()
print(round(model[0].weight.grad.norm().item(), 4))
"""


def test_a_clipped_grad_and_the_next_accumulation_are_all_kept(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, CLIP_THEN_AGAIN)
    doc = page.evaluate("window.gradtrace.app.doc")
    assert doc["status"] == "ok"
    assert doc["tensors"]["left_out_count"] == 0, doc["tensors"]["left_out"]
    (weight,) = [n for n in doc["graph"]["nodes"] if n.get("name") == "model.0.weight"]
    keys = [h["key"] for h in weight["grad_history"]] + [e["value"]["key"] for e in weight["grad_edits"]]
    assert len(keys) == 3  # after backward, after the clip, after the second backward
    index = page.evaluate("(id) => fetch(`/api/runs/${id}/tensors`).then((r) => r.json())", doc["id"])
    listed = {t["key"] for t in index["tensors"]}
    assert set(keys) <= listed
    page.locator("#graph").focus()
    page.keyboard.press("End")
    pick_node(page, re.compile("^model\\.0\\.weight"))
    inspector = page.locator("#inspector")
    tensors = inspector.locator("[data-gt='tensors']")
    expect(tensors.locator("[data-gt='tensor'][data-ready='1']").first).to_be_visible(timeout=30_000)
    expect(tensors).not_to_contain_text("not kept")
    history = inspector.locator(".gt-history")
    expect(history.locator(".gt-edit")).to_have_count(1, timeout=30_000)
    assert re.search(r"changed in place at line 8 \(norm × ", history.locator(".gt-edit").inner_text())
    assert ".grad after each accumulation (edited 1 time)" in inspector.inner_text()
    history.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "grad-history-kept.png"))
