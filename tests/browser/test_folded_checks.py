"""torch's own gradient checks as a user sees them on the page: one box with the verdict on the
line that called each, listed under "Not in the graph", and the iteration picker counting the
snippet's own iterations only (frontend/src/ui/folded.js, frontend/src/graph/groups.js)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser.pageutil import run_code

FUSED = """import torch
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * x * g
class WrongSquare(Square):
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x * g
x = torch.randn(3, dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(Square.apply, (x,)))
print(torch.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False))
w = torch.randn(3, requires_grad=True)
for step in range(4):
    loss = Square.apply(w).sum()
    loss.backward()
"""


def test_each_check_is_a_box_with_its_verdict_and_the_picker_counts_four(playground: Any,
                                                                         artifacts_dir: Path) -> None:
    page = playground
    run_code(page, FUSED)
    boxes = page.locator(".cm-editor .gt-folded-box")
    boxes.first.wait_for()
    assert [boxes.nth(i).inner_text().strip() for i in range(boxes.count())] == [
        "⊞ gradcheck passed ✓", "⊞ gradcheck failed ✗"]
    inspector = page.locator("#inspector").inner_text()
    assert "Not in the graph" in inspector and "torch's own check, folded, at" in inspector, inspector
    picker = page.locator(".gt-iter").first
    assert picker.is_visible() and "of 4" in picker.inner_text(), picker.inner_text()
    page.get_by_role("button", name="Wrap").first.click()  # the boxes sit at their lines' ends
    boxes.nth(1).scroll_into_view_if_needed()
    assert boxes.nth(1).is_visible()
    page.screenshot(path=str(artifacts_dir / "folded-gradcheck.png"))
