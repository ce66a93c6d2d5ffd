"""Hints and the first NaN as a user sees them in the page: the badge, the panel, the marks on
the graph and in the code, "show on graph", and searching "nan" (frontend/src/ui/findings.js)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from browser.pageutil import run_code
from pageguard import wait_until

WHERE_NAN = (Path(__file__).resolve().parents[1] / "capture" / "nan_cases" / "where_sqrt.py").read_text()

GAN_STEP = """import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
opt_g = torch.optim.SGD(G.parameters(), lr=0.1)
real, z = torch.randn(4, 2), torch.randn(4, 2)
fake = G(z)
d_loss = D(fake.detach()).mean() - D(real).mean()
opt_d.zero_grad()
d_loss.backward()
opt_d.step()
g_loss = -D(fake).mean()
opt_g.zero_grad()
g_loss.backward()
opt_g.step()
"""

BROADCAST_LOSS = """import torch
import torch.nn.functional as F

pred = torch.randn(3, 1, requires_grad=True)
target = torch.randn(3)
loss = F.mse_loss(pred * 2, target)
loss.backward()
"""


def _marks(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate("""() => { const s = window.gradtrace.app.scene;
        return (s.errorV || []).map(v => ({ label: s.view.vnodes[v].label,
                                            text: s.errorLabels ? s.errorLabels.get(v) : null })); }"""))


def test_the_first_nan_has_words_on_the_graph_and_in_its_sentence(playground: Any) -> None:
    page = playground
    run_code(page, WHERE_NAN)
    page.locator(".gt-nan-mark").first.click()
    wait_until(page, "document.querySelector('#sentence').innerText.includes('first NaN')")
    assert "This is the run's first NaN: SqrtBackward0 made it here." in page.locator("#sentence").inner_text()
    page.evaluate("window.gradtrace.app.canvas.drawNow()")
    placed = page.evaluate("window.gradtrace.app.canvas.placed.map(p => p.text)")
    assert "✱ first NaN made here" in placed, placed


def test_the_where_nan_program(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, WHERE_NAN)
    assert page.locator("#status-badge").inner_text() == "ok · x.grad has NaN"
    panel = page.locator("#findings")
    assert panel.is_visible()
    first = panel.locator(".gt-finding-nonfinite")
    # x = -1 and 0: the local derivatives are nan and inf
    assert "first NaN in backward: SqrtBackward0, line 5, elements 0–1: 0 × nan, 0 × inf" in first.inner_text()
    first.locator("summary").click()
    assert "torch.where computes both branches" in first.inner_text()
    assert "torch.sqrt(safe)" in first.locator(".gt-finding-fix").inner_text()
    marks = _marks(page)
    assert any(m["text"] == "✱ first NaN made here" and "Sqrt" in m["label"] for m in marks), marks
    assert page.locator(".gt-gutter .gt-mark-hint").count() == 1
    first.get_by_role("button", name="show on graph").click()
    wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
    assert "SqrtBackward0" in page.locator("#inspector").inner_text()
    mark = page.locator(".gt-nan-mark")
    assert mark.inner_text() == "✱ first NaN"
    mark.click()
    event = page.evaluate("window.gradtrace.app.doc.analysis.nonfinite[0].event")
    assert page.evaluate("window.gradtrace.app.player.k") == event + 1  # the step of SqrtBackward0
    assert "SqrtBackward0" in page.locator("#sentence").inner_text()
    page.locator("#search").fill("nan")
    assert page.locator("#search-count").inner_text() == "3 matches"
    page.screenshot(path=str(artifacts_dir / "findings-where-nan.png"))


MASKED_ROW = """import torch
q = torch.randn(2, 3, 4, requires_grad=True)
k = torch.randn(2, 3, 4)
scores = q @ k.transpose(-1, -2)
pad = torch.tensor([[False, False, False], [True, True, True]])
scores = scores.masked_fill(pad[:, None, :], float("-inf"))
attn = torch.softmax(scores, dim=-1)
attn.sum().backward()
"""


def test_a_forward_nan_says_what_arithmetic_made_it(playground: Any, artifacts_dir: Path) -> None:
    """A padding mask that hides a whole row: the forward entry names softmax over a row of
    -inf (analysis/nonfinite/forward_traps.py), with the trap and a fix, shown when opened."""
    page = playground
    run_code(page, MASKED_ROW)
    first = page.locator("#findings .gt-finding-nonfinite").first
    assert first.inner_text().startswith("✖ first NaN in forward: SoftmaxBackward0, line 7")
    first.locator("summary").click()
    expect(first.locator(".gt-finding-cause")).to_have_text(
        "softmax of a row whose every entry is −inf: exp gives 0 everywhere and 0 / 0 is NaN")
    assert "padding mask" in first.inner_text()
    assert "torch.finfo(scores.dtype).min" in first.locator(".gt-finding-fix").inner_text()
    first.screenshot(path=str(artifacts_dir / "findings-forward-cause.png"))


def test_a_hint_with_its_evidence_and_fix(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, BROADCAST_LOSS)
    hint = page.locator("#findings .gt-finding[data-code='loss-broadcast']")
    hint.locator("summary").click()
    text = hint.inner_text()
    assert "the loss broadcast its input from [3, 1] to [3, 3]" in text
    assert "input shape" in text and "[3, 1]" in text
    assert "F.mse_loss(pred.squeeze(-1), target)" in hint.locator(".gt-finding-fix").inner_text()
    page.screenshot(path=str(artifacts_dir / "findings-loss-broadcast.png"))


def test_a_gan_step_raises_nothing(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, GAN_STEP)
    assert page.locator("#status-badge").inner_text() == "ok"
    assert page.locator("#findings").is_hidden()
    page.screenshot(path=str(artifacts_dir / "findings-gan-step.png"))


CLIPPING = """import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
loss = model(torch.randn(16, 4)).pow(2).mean() * 50
loss.backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
print(round(model[0].weight.grad.norm().item(), 4))
"""


def test_the_clipping_program_shows_torchs_final_gradient(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, CLIPPING)
    printed = page.locator("#stdout").inner_text().strip()
    hint = page.locator("#findings .gt-finding[data-code='grad-edited']")
    hint.locator("summary").click()
    assert "line 8" in hint.inner_text()
    assert page.locator(".gt-gutter .gt-mark-hint").count() == 1
    hint.get_by_role("button", name="show on graph").click()  # model.0.weight, at the last step
    wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
    # the .grad section comes after the first tensor is drawn (NOTE [the looked-at tensor
    # first] in frontend/src/ui/tensors.js): wait for it rather than read the inspector at once
    expect(page.locator("#inspector")).to_contain_text(f"norm {printed}", timeout=30_000)
    # the clipped .grad is kept in the run's tensor file (the edit's own entry, ``ge0``), and
    # so is every gradient under it: nothing is left out as changed
    tensors = page.locator("#inspector [data-gt='tensors']")
    expect(tensors.locator("[data-gt='tensor'][data-key$='.ge0'][data-ready='1']")).to_have_count(1, timeout=30_000)
    expect(tensors.locator("[data-gt='tensors-left-out']")).to_have_count(0)
    expect(tensors).not_to_contain_text("not kept")
    page.screenshot(path=str(artifacts_dir / "findings-clipping.png"))


DEEP_SIGMOID_EVAL = """import torch
from torch import nn

torch.manual_seed(0)
layers = []
for _ in range(6):
    lin = nn.Linear(16, 16)
    nn.init.normal_(lin.weight, std=0.05)
    layers += [lin, nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Dropout(0.2), nn.Linear(16, 1))
loss = model(torch.randn(32, 16)).pow(2).mean()
loss.backward()
with torch.no_grad():
    val = model(torch.randn(32, 16)).pow(2).mean()
"""


def test_vanishing_gradients_and_an_eval_in_training_mode(playground: Any, artifacts_dir: Path) -> None:
    """Two hints of the flow: one on the graph (the first and last weight layers), one with no
    node at all (the eval block runs under no_grad), which links only to its line."""
    page = playground
    run_code(page, DEEP_SIGMOID_EVAL)
    vanish = page.locator("#findings .gt-finding[data-code='gradients-vanish']")
    vanish.locator("summary").click()
    assert "gradients vanish toward the first layer" in vanish.inner_text()
    assert "RMS of each weight's .grad" in vanish.inner_text()
    vanish.get_by_role("button", name="show on graph").click()
    wait_until(page, "window.gradtrace.app.viewer.selectedV >= 0")
    assert "model.0.weight" in page.locator("#inspector").inner_text()
    evaluation = page.locator("#findings .gt-finding[data-code='train-mode-in-eval']")
    evaluation.locator("summary").click()
    assert "line 14 evaluates with Dropout in training mode" in evaluation.inner_text()
    assert evaluation.get_by_role("button", name="show on graph").count() == 0
    assert "model.eval()" in evaluation.locator(".gt-finding-fix").inner_text()
    evaluation.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "findings-vanish-eval.png"), full_page=True)


STARVED = """import torch
from torch import nn

torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.spare = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))
        self.head = nn.Linear(4, 1)
    def forward(self, x):
        return self.head(self.body(x) * self.scale.data)

net = Net()
net.body.requires_grad_(False)
net(torch.randn(8, 4)).pow(2).mean().backward()
"""


def test_parameters_with_no_gradient_are_listed_with_what_starved_them(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, STARVED)
    section = page.locator('#findings [data-gt="starved"]')
    section.wait_for()
    assert section.locator("h2").text_content() == "No gradient (5)"
    items = [t.strip() for t in section.locator("li").all_inner_texts()]
    assert items[0].startswith("net.scale cut off: read through .data") and "line 13" in items[0]
    assert items[1].startswith("net.spare.weight unused") and items[2].startswith("net.spare.bias unused")
    assert items[3].startswith("net.body.weight frozen") and items[4].startswith("net.body.bias frozen")
    page.locator("#findings").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "findings-starved.png"))


SCALER_WARMUP = """import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 22, backoff_factor=0.0625)
x = torch.randn(16, 8); y = torch.randn(16, 1)
for step in range(6):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def test_a_nan_the_grad_scaler_skipped_is_a_warning_that_says_so(playground: Any, artifacts_dir: Path) -> None:
    """NOTE [a NaN GradScaler skips] in analysis/nonfinite/scaler.py: the first two iterations
    overflow float16 and GradScaler skips their steps; the entry is a warning, not an error, and
    says which iterations were skipped (tests/analysis/test_scaler_skips.py checks them against
    a bare run's scaler)."""
    page = playground
    run_code(page, SCALER_WARMUP)
    first = page.locator("#findings .gt-finding-nonfinite").first
    expect(first).to_have_class(re.compile(r"\bgt-finding-warning\b"))
    first.locator("summary").click()
    expect(first.locator(".gt-finding-handled")).to_contain_text(
        "GradScaler (line 7) found it and skipped the optimizer step after this backward pass")
    expect(first.locator(".gt-finding-handled")).to_contain_text("It skipped 2 of 6 iterations (1, 2)")
    first.screenshot(path=str(artifacts_dir / "findings-grad-scaler.png"))
