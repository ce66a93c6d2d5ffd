"""The user's names and what the graph cannot show, as a user sees them in the page and in a
saved HTML file: a leaf's defining line (a link that highlights it in the code), a tied
embedding named as tied, intermediates' variables on their boxes, a frozen backbone and its
``no_grad`` block (frontend/src/ui/definitions.js, frontend/src/graph/names.js)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from browser.pageutil import node_texts, open_saved_file, pick_node, run_code, run_example
from pageguard import wait_until
from programs import FINE_TUNE, TINY_LM  # held against torch in tests/capture/test_definitions.py


def _selected_line_text(page: Any) -> str:
    wait_until(page, "document.querySelector('.cm-editor .gt-line-sel') !== null")
    return str(page.locator(".cm-editor .gt-line-sel").first.inner_text())


def test_a_tied_embedding_in_a_tiny_lm(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, TINY_LM)
    texts = node_texts(page)
    # one node for the tied weight, its box naming the other path; the forward's variables
    assert sum("model.emb.weight" in t for t in texts) == 1, texts
    assert any(t.startswith("model.emb.weight = model.lm_head.weight") and "tied" in t for t in texts), texts
    assert not any(t.startswith("model.lm_head.weight") for t in texts), texts
    assert any("TanhBackward0" in t and "→ h" in t for t in texts), texts
    assert any("→ logits" in t for t in texts), texts
    pick_node(page, re.compile(r"^model\.emb\.weight"))
    inspector = page.locator("#inspector")
    text = inspector.inner_text()
    assert "tied" in text and "model.emb.weight = model.lm_head.weight" in text, text
    page.screenshot(path=str(artifacts_dir / "definitions-tied-lm-inspector.png"))
    inspector.get_by_role("button", name="line 8").click()  # where it is defined
    assert "nn.Embedding(vocab, dim)" in _selected_line_text(page)
    assert "defines model.emb.weight (tied: model.emb.weight = model.lm_head.weight)" in inspector.inner_text()
    assert "null" not in inspector.inner_text()
    page.screenshot(path=str(artifacts_dir / "definitions-tied-lm.png"))


def test_a_fine_tune_with_a_frozen_backbone_under_no_grad(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, FINE_TUNE)
    # the code pane: the block's lines tinted, the `with` line says why
    assert page.locator(".cm-editor .gt-line-nograd").count() == 2
    head = page.locator(".cm-editor .gt-nograd-head")
    assert head.count() == 1 and "no graph recorded here" in head.inner_text()
    box = page.locator("#inspector .gt-not-in-graph")
    text = box.inner_text()
    assert "frozen backbone.0: weight, bias" in text and "frozen backbone.2: weight, bias" in text, text
    assert "no graph lines 11–12: torch.no_grad() at line 10" in text, text
    page.screenshot(path=str(artifacts_dir / "definitions-fine-tune.png"))
    # a line of the block with no node says why
    page.locator(".cm-line").nth(10).click()
    inspector = page.locator("#inspector")
    wait_until(page, "document.querySelector('#inspector').innerText.includes('Line 11')")
    assert "Gradients are off here (torch.no_grad() at line 10)" in inspector.inner_text()


def test_lesson_04_leaves_link_to_the_model_line(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "mlp_loss")
    pick_node(page, re.compile(r"^model\.0\.weight"))
    inspector = page.locator("#inspector")
    assert "defined" in inspector.inner_text()
    page.screenshot(path=str(artifacts_dir / "definitions-lesson-04-inspector.png"))
    inspector.get_by_role("button", name="line 6").click()
    assert "nn.Sequential(nn.Linear(4, 8)" in _selected_line_text(page)
    page.screenshot(path=str(artifacts_dir / "definitions-lesson-04.png"))


def test_the_saved_html_shows_the_same(browser: Any, tmp_path: Path, artifacts_dir: Path,
                                       frontend_bundle: Path) -> None:
    from gradtrace.notebook.html import save_html
    from rundoc import run_doc

    # the graph and events come as their canonical JSON text (NOTE [one document path])
    doc = {k: orjson.loads(v) if k in ("graph", "events") and isinstance(v, str) else v
           for k, v in run_doc(FINE_TUNE).items()}
    path = save_html(doc, tmp_path / "fine_tune.html")
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 720}) as opened:
        page = opened.page
        root = page.locator("#gradtrace")
        text = root.locator(".gt-not-in-graph").inner_text()
        assert "frozen backbone.0: weight, bias" in text, text
        assert root.locator(".cm-editor .gt-line-nograd").count() == 2
        page.screenshot(path=str(artifacts_dir / "definitions-fine-tune-saved-html.png"))
    assert opened.errors == []


PARTLY_FROZEN = """import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model[0].weight.requires_grad_(False)
x = torch.randn(3, 4, requires_grad=True)
model(x).sum().backward()
"""


def test_a_node_of_a_layer_with_a_frozen_weight_says_so(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, PARTLY_FROZEN)
    texts = node_texts(page)
    assert not any(t.startswith("model.0.weight") for t in texts), texts  # no node: frozen
    assert any(t.startswith("model.0.bias") for t in texts), texts
    pick_node(page, re.compile(r"^AddmmBackward0"))
    text = page.locator("#inspector").inner_text()
    assert "frozen" in text and "model.0: weight (requires_grad=False" in text, text
    page.screenshot(path=str(artifacts_dir / "definitions-partly-frozen.png"))
