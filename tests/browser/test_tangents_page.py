"""Forward-mode AD as a user sees it on the page: the inspector lists the forward pass carrying
tangents, step by step with its values; a code line says the tangents it carried; the node a
dual call also made shows its tangent (frontend/src/ui/tangents.js)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from browser.pageutil import pick_node, run_code

FORWARD_AD = """import torch
import torch.autograd.forward_ad as fwAD
x = torch.tensor([0.5, 1.0, 2.0])
v = torch.tensor([1.0, 0.0, 2.0])
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
with fwAD.dual_level():
    d = fwAD.make_dual(x, v)
    y = torch.sin(d) * w
    out = y.sum()
    jvp = fwAD.unpack_dual(out).tangent
print(jvp)
out.backward()
"""


def test_the_forward_pass_carrying_tangents_is_listed_with_torchs_values(playground: Any,
                                                                        artifacts_dir: Path) -> None:
    page = playground
    run_code(page, FORWARD_AD)
    section = page.locator("#inspector .gt-tangents")
    section.wait_for()
    text = section.inner_text()
    assert "Forward pass carrying tangents" in text
    items = section.locator("li")
    assert items.count() == 4
    # torch: tangent of sin(d) * w is cos(x) * v * w = [0.8776, 0, -0.8323 * 3]
    assert "make_dual → d" in items.nth(0).inner_text() and "[1, 0, 2]" in items.nth(0).inner_text()
    assert "sin" in items.nth(1).inner_text() and "0.8776" in items.nth(1).inner_text()
    assert "mul → y" in items.nth(2).inner_text() and "-2.497" in items.nth(2).inner_text()
    assert "sum → out" in items.nth(3).inner_text()
    page.screenshot(path=str(artifacts_dir / "forward-ad-inspector.png"))
    pick_node(page, re.compile(r"^MulBackward0"))
    inspector = page.locator("#inspector").inner_text()
    assert "tangent" in inspector and "#2 mul → y" in inspector, inspector
    page.screenshot(path=str(artifacts_dir / "forward-ad-node.png"))
