"""Explain this node in the inspector: lesson 01's MulBackward0 and lesson 04's AddmmBackward0
show their rule with the recorded numbers (from GET /api/runs/{id}/explain), and the element
picker re-explains another element."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import run_example

pytestmark = pytest.mark.browser

_SELECT = """(name) => { const app = window.gradtrace.app, nodes = app.index.nodes;
    const v = app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 &&
      nodes[n.refs[0]].name === name && (nodes[n.refs[0]].saved || []).some(s => s.value));
    app.viewer.selectNode(v); return nodes[app.scene.view.vnodes[v].refs[0]]; }"""
_SELECT_ANY = """(name) => { const app = window.gradtrace.app, nodes = app.index.nodes;
    app.viewer.selectNode(app.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 &&
      nodes[n.refs[0]].name === name)); }"""


def test_lesson_01_mul_is_explained(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "chain_rule")
    page.evaluate(_SELECT, "MulBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_self = grad_out · other")
    expect(panel.locator("[data-gt=explain-instance]").first).to_contain_text("= 2")  # 1 · 2 = 2 (x · x at x = 2)
    page.screenshot(path=str(artifacts_dir / "explain-lesson-01-mul.png"))


def test_lesson_04_addmm_is_explained_per_element(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "mlp_loss")
    page.evaluate(_SELECT, "AddmmBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_mat1 = grad_out @ mat2ᵀ")
    instances = panel.locator("[data-gt=explain-instance]")
    expect(instances.first).to_contain_text("at [0]")
    pick = panel.locator("[data-gt=explain-element]").first
    pick.select_option("1")
    expect(instances.first).to_contain_text("at [1]")
    page.screenshot(path=str(artifacts_dir / "explain-lesson-04-addmm.png"))


def test_lesson_05_pow_reads_its_saved_exponent(playground: Any, artifacts_dir: Path) -> None:
    """PowBackward0's rule needs the exponent, a non-tensor argument: capture's saved_args."""
    page = playground
    run_example(page, "leaf_and_retain_grad")
    node = page.evaluate(_SELECT, "PowBackward0")
    assert node["saved_args"] == {"exponent": 2}
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_self = grad_out · exponent · self^(exponent − 1)")
    expect(panel.locator("[data-gt=explain-args]")).to_have_text("with exponent = 2")
    expect(panel.locator("[data-gt=explain-instance]").first).to_contain_text(" · 2 · ")
    expect(panel.locator(".gt-explain-recorded").first).not_to_contain_text("differs")
    page.screenshot(path=str(artifacts_dir / "explain-lesson-05-pow.png"))


def test_a_custom_function_points_to_its_own_backward(playground: Any) -> None:
    """A node of the snippet's own autograd.Function has no rule in the catalogue: the panel
    points to its `backward` lines, and the link goes there."""
    from browser.pageutil import run_code
    from gradcheck.cube import WRONG_CUBE

    page = playground
    run_code(page, WRONG_CUBE)
    page.evaluate("""() => { const app = window.gradtrace.app, nodes = app.index.nodes;
        const v = app.scene.view.vnodes.findIndex(n => n.refs && nodes[n.refs[0]].name === 'CubeBackward');
        app.viewer.selectNode(v); }""")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("your code: this node's backward is the backward of your autograd.Function, lines")
    assert "catalogue" not in panel.inner_text()
    first = next(i for i, t in enumerate(WRONG_CUBE.splitlines(), 1) if "def backward" in t)
    panel.get_by_role("button", name=f"go to line {first}").click()
    expect(page.locator(".cm-line.gt-line-sel")).to_have_count(1)
    assert "def backward" in page.locator(".cm-line.gt-line-sel").inner_text()


def test_a_transformer_node_is_explained_at_a_picked_element_from_the_tensor_file(
        page: Any, live_server: Any, frontend_bundle: Path, artifacts_dir: Path) -> None:
    """A GPT-like model's attention matmul (BmmBackward0: operands of 512 elements, far past the
    document's inline values) stored with its tensor file: its page explains it at a picked
    element with the numbers read from the file, as recorded."""
    from api.tensor_runs import server_store
    from capture.tensor_oracle import recorded_run
    from capture.test_tensor_oracle import GPT_LIKE
    from gradtrace.storage.codec import encode
    from pageguard import wait_until

    doc, _, _ = recorded_run(GPT_LIKE, native=True)
    encoded = encode(doc.model_dump(mode="json", by_alias=True))
    with server_store(live_server) as store:
        store.put_run(encoded, doc.tensor_bytes())
    page.goto(f"{live_server.url}/r/{encoded.doc_id}")
    wait_until(page, "window.gradtrace !== undefined && !!window.gradtrace.app && !!window.gradtrace.app.scene "
                     "&& window.gradtrace.app.scene.view.vnodes.length > 0")
    page.evaluate(_SELECT_ANY, "BmmBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_self = grad_out @ mat2ᵀ  (per batch)")
    panel.locator("[data-gt=explain-element]").first.select_option("3,5,2")
    instances = panel.locator("[data-gt=explain-instance]")
    expect(instances.first).to_contain_text("at [3, 5, 2]")
    expect(instances).to_have_count(2)
    assert "not kept" not in panel.inner_text()
    expect(panel.locator(".gt-explain-recorded").first).not_to_contain_text("differs")
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "explain-gpt-bmm-picked-element.png"))
    assert page.page_errors == [], page.page_errors



def test_a_bias_whose_terms_cancel_is_said_to(playground: Any, artifacts_dir: Path) -> None:
    """NOTE [terms that cancel] in analysis/explain/node.py: a convolution's bias before batch
    norm: the rule's float64 sum and the kernel's float32 one are both rounding noise around 0,
    and the panel says so beside them (tests/analysis/test_explain_cancel.py checks the numbers
    against torch's)."""
    from analysis.test_explain_cancel import BEFORE_BN
    from browser.pageutil import run_code

    page = playground
    run_code(page, BEFORE_BN)
    page.evaluate(_SELECT_ANY, "ConvolutionBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_bias")
    cancels = panel.locator("[data-gt=explain-cancels]")
    expect(cancels.first).to_contain_text("the terms cancel: their sizes add up to ", timeout=30_000)
    expect(cancels.first).to_contain_text("both rounding noise around 0")
    cancels.first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "explain-bias-terms-cancel.png"))


LEARNED_TEMPERATURE = """import torch
torch.manual_seed(0)
w = torch.randn(3, 4, requires_grad=True)
t = torch.tensor(0.7, requires_grad=True)
(w / t).pow(2).sum().backward()
"""


def test_a_0_dim_divisors_gradient_is_the_sum_over_the_elements_it_divided(
        playground: Any, artifacts_dir: Path) -> None:
    """A learned temperature ``t`` (a 0-dim tensor) divides every element of ``w``: its rule's
    instance sums a term per element and equals the gradient recorded
    (tests/analysis/test_explain_numbers.py holds it to torch's ``t.grad``)."""
    from browser.pageutil import run_code

    page = playground
    run_code(page, LEARNED_TEMPERATURE)
    page.evaluate(_SELECT_ANY, "DivBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_other = −grad_out · self / other²")
    other = panel.locator("[data-gt=explain-instance]").nth(1)
    expect(other).to_contain_text(" + …")
    expect(panel.locator(".gt-explain-recorded").nth(1)).not_to_contain_text("differs")
    other.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "explain-0-dim-divisor.png"))


LSTM_STEP = """import torch
from torch import nn
torch.manual_seed(0)
lstm = nn.LSTM(3, 4)
head = nn.Linear(4, 1)
x = torch.randn(5, 2, 3)
out, (h, c) = lstm(x)
loss = head(out[-1]).pow(2).mean()
loss.backward()
"""


def test_an_lstm_layer_is_explained_through_time(playground: Any, artifacts_dir: Path) -> None:
    """nn.LSTM's fused layer: each weight's rule is a sum over the steps, worked out by
    backpropagation through time, and it equals the recorded gradient
    (tests/analysis/test_explain_numbers.py holds every element to torch's ``.grad``)."""
    from browser.pageutil import run_code

    page = playground
    run_code(page, LSTM_STEP)
    page.evaluate(_SELECT_ANY, "MkldnnRnnLayerBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_weight0 = Σ_t dz[t]ᵀ input[t]")
    expect(panel).to_contain_text("backpropagation through time")
    instance = panel.locator("[data-gt=explain-instance]").first
    expect(instance).to_contain_text(" + …")
    expect(panel.locator(".gt-explain-recorded").first).not_to_contain_text("differs")
    expect(panel).not_to_contain_text("no rule")
    instance.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "explain-lstm-layer.png"))


GRADIENT_PENALTY = """import torch
from torch import nn
torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.randn(6, 2, requires_grad=True)
g, = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
penalty.backward()
"""


def test_a_gradient_penaltys_double_backward_node_is_explained(playground: Any, artifacts_dir: Path) -> None:
    """The node a create_graph pass made for tanh's backward: its operands are the gradient and
    the tanh output kept in that pass, and its rule's instance equals the recorded gradient
    (tests/analysis/test_explain.py holds the rule to torch's ``.grad``)."""
    from browser.pageutil import run_code

    page = playground
    run_code(page, GRADIENT_PENALTY)
    page.evaluate(_SELECT_ANY, "TanhBackwardBackward0")
    panel = page.locator("#inspector [data-gt=explain]")
    expect(panel).to_contain_text("grad_grad_output = grad_out · (1 − output²)")
    expect(panel).to_contain_text("grad_output = grad_out · (−2 · output · grad_output)")
    expect(panel.locator("[data-gt=explain-instance]")).to_have_count(2)
    expect(panel.locator(".gt-explain-recorded").first).not_to_contain_text("differs")
    expect(panel).not_to_contain_text("not kept")
    panel.locator("[data-gt=explain-instance]").nth(1).scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts_dir / "explain-double-backward.png"))
