"""The inspector's tensors in a saved HTML file opened offline (its tensors embedded: NOTE
[tensors carried offline] in backend/gradtrace/notebook/carried_tensors.py): an attention's
weights and their gradient as heatmaps with a slice picker, the hovered element's exact number
(checked against the tensor ``doc.tensor(key)`` gives in Python), a histogram, NaN/±Inf in
their own colours, a budget that leaves tensors out and says so, Explain at an element picked
in the heatmap, and the graph coloured by a statistic. Screenshots: tests/artifacts/tensors-*.png.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import expect

from browser.pageutil import open_saved_file

pytestmark = pytest.mark.browser

SELECT = """(name, shape = null) => { const v = window.gradtrace.viewer, nodes = v.index.nodes;
  const i = nodes.findIndex(n => n.name === name && (!shape || String(n.shape) === String(shape)));
  v.viewer.selectNode(v.scene.view.vnodes.findIndex(n => n.refs && n.refs.length === 1 && n.refs[0] === i));
  return nodes[i].id; }"""


PIXEL_4_4 = "c => Array.from(c.getContext('2d').getImageData(4, 4, 1, 1).data.slice(0, 3))"


def _attention_document(T: int = 16) -> Any:
    """A small GPT-like block written here (embedding, one causal attention with explicit
    softmax weights, layer norm, a tied head), one training step, recorded in process."""
    import torch
    import torch.nn.functional as F

    import gradtrace

    with gradtrace.record() as rec:
        torch.manual_seed(0)
        vocab, B, H, D = 11, 2, 2, 4
        emb = torch.nn.Embedding(vocab, H * D)
        ln = torch.nn.LayerNorm(H * D)
        wq = torch.nn.Linear(H * D, 3 * H * D)
        tokens = torch.randint(0, vocab, (B, T))
        h = ln(emb(tokens))
        q, k, v = wq(h).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
        mask = torch.ones(T, T).tril() == 0
        att = (q @ k.transpose(-2, -1) / D ** 0.5).masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, H * D)
        logits = y @ emb.weight.t()  # the tied head
        F.cross_entropy(logits.reshape(-1, vocab), tokens.reshape(-1)).backward()
    return rec.document()


def _np(doc: Any, key: str) -> Any:
    """The kept tensor as numpy (``doc.tensor`` answers torch in the recording process)."""
    t = doc.tensor(key)
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _root(page: Any) -> Any:
    return page.locator("#gradtrace")


def _hover_cell(page: Any, canvas: Any, rows: int, cols: int, r: int, c: int) -> None:
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + (c + 0.5) * box["width"] / cols, box["y"] + (r + 0.5) * box["height"] / rows)


def test_attention_gradient_heatmap_hover_is_exact_offline(browser: Any, tmp_path: Path, frontend_bundle: Path,
                                                             artifacts_dir: Path) -> None:
    doc = _attention_document()
    path = Path(doc.save_html(str(tmp_path / "attention.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        node_id = page.evaluate(SELECT, "SoftmaxBackward0")
        grad = _root(page).locator("[data-gt=tensor]", has_text="grad_outputs[0] (flowing in)")
        expect(grad).to_have_attribute("data-ready", "1")
        key = grad.get_attribute("data-key")
        assert key and key.startswith("e") and key.endswith(".go0"), key
        stored = _np(doc, key)
        assert stored.shape == (2, 2, 16, 16) and stored.dtype == np.float32
        # a 4-D tensor: a plane at a time, chosen with the slice picker
        picks = grad.locator("[data-gt=tensor-slice] select")
        expect(picks).to_have_count(2)
        picks.nth(0).select_option("1")
        picks.nth(1).select_option("1")
        canvas = grad.locator("[data-gt=tensor-heatmap]")
        expect(canvas).to_have_count(1)
        hover = grad.locator("[data-gt=tensor-hover]")
        for r, c in [(3, 2), (15, 0), (15, 15), (0, 0)]:
            _hover_cell(page, canvas, 16, 16, r, c)
            expect(hover).to_have_attribute("data-index", f"1,1,{r},{c}")
            text = hover.get_attribute("data-value")
            assert np.float32(text) == stored[1, 1, r, c], (r, c, text, stored[1, 1, r, c])
            assert hover.inner_text() == f"[1, 1, {r}, {c}] = {text}"
        # the keyboard reaches every element too: focus, then arrows
        canvas.focus()
        expect(hover).to_have_attribute("data-index", "1,1,0,0")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowRight")
        expect(hover).to_have_attribute("data-index", "1,1,1,1")
        assert np.float32(hover.get_attribute("data-value")) == stored[1, 1, 1, 1]
        counts = grad.locator("[data-gt=tensor-counts]")
        expect(counts).to_contain_text("1024 finite values")
        expect(grad.locator("[data-gt=tensor-histogram]")).to_have_count(1)
        # the weights themselves (the op's output): the causal mask's zeros are in the histogram's words
        out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        expect(out).to_have_attribute("data-ready", "1")
        zeros = int((_np(doc, f"{node_id}.out0") == 0).sum())
        expect(out.locator("[data-gt=tensor-counts]")).to_contain_text(f"{zeros} zeros")
        _hover_cell(page, canvas, 16, 16, 5, 9)
        grad.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "tensors-attention-gradient.png"))
        # nothing but the file and the layout worker's blob: the numbers came from the file
        assert [u for u in opened.requests if not u.startswith("blob:")] == [path.as_uri()], opened.requests
        assert opened.errors == []


def test_explain_at_an_element_picked_in_the_heatmap(browser: Any, tmp_path: Path, frontend_bundle: Path,
                                                     artifacts_dir: Path) -> None:
    # 2·2·12·12 elements: few enough for the document's inline values, which a saved file's
    # explanations read (backend/gradtrace/analysis/explain/offline.py); a heatmap all the same
    doc = _attention_document(T=12)
    path = Path(doc.save_html(str(tmp_path / "attention.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        # the expand of the attention weights before their product with v: its gradient
        # flowing out is the weights' gradient
        page.evaluate(f"({SELECT})('ExpandBackward0', [2, 2, 12, 12])")
        grad = _root(page).locator("[data-gt=tensor]", has_text="grad_inputs[0] (flowing out)")
        expect(grad).to_have_attribute("data-ready", "1")
        canvas = grad.locator("[data-gt=tensor-heatmap]")
        canvas.scroll_into_view_if_needed()
        box = canvas.bounding_box()
        # (a saved file carries the explanations of a gradient's first 64 elements: row 3 is among them)
        page.mouse.click(box["x"] + 7.5 * box["width"] / 12, box["y"] + 3.5 * box["height"] / 12)
        explain = _root(page).locator("[data-gt=explain]")
        expect(explain.locator("[data-gt=explain-element]").first).to_have_value("0,0,3,7")
        expect(explain.locator("[data-gt=explain-instance]").first).to_contain_text("at [0, 0, 3, 7]")
        # Explain's recorded number at that element is the kept gradient's, as torch passed it on
        recorded = explain.locator(".gt-explain-recorded").first.inner_text()
        assert recorded.startswith("recorded grad_inputs[0, 0, 3, 7]: "), recorded
        kept = _np(doc, grad.get_attribute("data-key") or "")[0, 0, 3, 7]
        assert abs(float(recorded.split(": ")[1]) - kept) <= 1e-5 * max(1.0, abs(kept)), (recorded, kept)
        explain.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "tensors-explain-picked.png"))
        assert opened.errors == []


def test_nan_and_inf_have_their_own_colours(browser: Any, tmp_path: Path, frontend_bundle: Path,
                                            artifacts_dir: Path) -> None:
    import torch

    import gradtrace

    with gradtrace.record() as rec:
        x = torch.arange(-40.0, 41.0).reshape(9, 9).requires_grad_()
        (x.log() + x.reciprocal()).nan_to_num().sum().backward()
    doc = rec.document()
    path = Path(doc.save_html(str(tmp_path / "nonfinite.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        page.evaluate(SELECT, "AddBackward0")
        out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        expect(out).to_have_attribute("data-ready", "1")
        stored = _np(doc, out.get_attribute("data-key"))
        # log(x) + 1/x: NaN below 0, -inf + inf = NaN at 0, finite above
        colours = out.locator("[data-gt=tensor-heatmap]").evaluate("""c => {
            const d = c.getContext('2d').getImageData(0, 0, 9, 9).data;
            return Array.from({length: 81}, (_, i) => [d[4 * i], d[4 * i + 1], d[4 * i + 2]]); }""")
        for i, rgb in enumerate(colours):
            x = stored.reshape(-1)[i]
            if np.isnan(x):
                assert rgb == [214, 0, 214], (i, rgb)
            else:
                assert rgb not in ([214, 0, 214], [255, 170, 0], [0, 176, 160]), (i, x, rgb)
        expect(out.locator("[data-gt=tensor-counts]")).to_contain_text(f"{int(np.isnan(stored).sum())} NaN")
        # the reciprocal alone: +inf at 0
        page.evaluate(SELECT, "ReciprocalBackward0")
        rec_out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        expect(rec_out).to_have_attribute("data-ready", "1")
        pixel = rec_out.locator("[data-gt=tensor-heatmap]").evaluate(PIXEL_4_4)
        assert pixel == [255, 170, 0]  # x[4, 4] = 0 → 1/0 = +inf
        _hover_cell(page, rec_out.locator("[data-gt=tensor-heatmap]"), 9, 9, 4, 4)
        expect(rec_out.locator("[data-gt=tensor-hover]")).to_have_text("[4, 4] = inf")
        page.evaluate(SELECT, "LogBackward0")
        log_out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        expect(log_out).to_have_attribute("data-ready", "1")
        pixel = log_out.locator("[data-gt=tensor-heatmap]").evaluate(PIXEL_4_4)
        assert pixel == [0, 176, 160]  # log(0) = -inf
        expect(_root(page).locator("[data-gt=tensor-legend]")).to_contain_text("NaN")
        expect(_root(page).locator("[data-gt=tensor-legend]")).to_contain_text("+Inf")
        expect(_root(page).locator("[data-gt=tensor-legend]")).to_contain_text("−Inf")
        log_out.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "tensors-nonfinite.png"))
        assert opened.errors == []


def test_a_small_budget_leaves_tensors_out_and_says_so(browser: Any, tmp_path: Path, frontend_bundle: Path) -> None:
    doc = _attention_document()
    # room for the leaves and the gradients, not for every forward output
    path = Path(doc.save_html(str(tmp_path / "small.html"), tensor_budget=40_000))
    html = path.read_text()
    assert 'id="gt-tensors"' in html and "left_out_count" in html
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        page.evaluate(SELECT, "SoftmaxBackward0")
        out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        expect(out).to_have_attribute("data-ready", "error")
        expect(out).to_contain_text("this saved file left it out")
        expect(out).to_contain_text("budget")
        assert opened.errors == []


def test_the_graph_is_coloured_by_a_statistic(browser: Any, tmp_path: Path, frontend_bundle: Path,
                                              artifacts_dir: Path) -> None:
    doc = _attention_document()
    path = Path(doc.save_html(str(tmp_path / "attention.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        _root(page).locator("#legend summary").click()
        pick = _root(page).locator("[data-gt=colour-by-pick]")
        pick.select_option("grad")
        scale = _root(page).locator("[data-gt=colour-by-scale]")
        expect(scale).to_contain_text("nodes coloured")
        expect(scale).to_contain_text("log scale")
        # every single-node box with a gradient norm in the document is tinted, the larger norm the deeper
        got = page.evaluate("""() => { const v = window.gradtrace.viewer, tint = v.viewer.canvas.tint;
            return [...tint].map(([u, c]) => [v.index.nodes[v.scene.view.vnodes[u].refs[0]].id, c]); }""")
        norms = {}
        for n in doc.graph.nodes:
            if n.kind == "tensor" and n.grad is not None and n.grad.stats is not None:
                norms[n.id] = float(n.grad.stats.norm)
        tinted = dict(got)
        assert norms and set(norms) <= set(tinted), (norms, tinted)
        green = {k: int(tinted[k].split(",")[1]) for k in norms}
        ordered = sorted(norms, key=norms.get)
        assert green[ordered[0]] >= green[ordered[-1]], (norms, green)
        page.screenshot(path=str(artifacts_dir / "tensors-colour-by-grad.png"))
        pick.select_option("")
        assert page.evaluate("window.gradtrace.viewer.viewer.canvas.tint") is None
        assert opened.errors == []


def test_what_the_recording_left_out_is_said_in_the_inspector(browser: Any, tmp_path: Path,
                                                              frontend_bundle: Path) -> None:
    """A recording budget too small for every tensor: a TensorValue without a key says it was
    not kept, and the section says how many, their bytes and why (the document's left_out)."""
    import torch

    import gradtrace

    with gradtrace.record(tensor_budget=4096) as rec:
        torch.manual_seed(0)
        w = torch.randn(16, 16, requires_grad=True)
        (w.tanh() @ w).sum().backward()
    doc = rec.document()
    assert doc.tensors is not None and doc.tensors.left_out_count > 0
    path = Path(doc.save_html(str(tmp_path / "budget.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        node = page.evaluate(SELECT, "TanhBackward0")
        kept = next(n for n in doc.graph.nodes if n.id == node)
        note = _root(page).locator("[data-gt=tensors-left-out]")
        expect(note).to_contain_text(f"{doc.tensors.left_out_count} of this run's tensors")
        expect(note).to_contain_text("past the run's byte budget ×")
        out = _root(page).locator("[data-gt=tensor]", has_text="output, as the op returned it")
        # forward values go last: this one was let go of while recording, and the file names it
        assert kept.output is None
        assert ("budget" in {e.reason for e in doc.tensors.left_out if e.key == f"{node}.out0"})
        expect(out).to_contain_text("not kept: past the run's byte budget")
        assert opened.errors == []


def test_a_sparse_gradient_says_why_the_file_does_not_hold_it(browser: Any, tmp_path: Path,
                                                              artifacts_dir: Path) -> None:
    """An embedding with sparse gradients (a recommender's): its ``.grad`` is a sparse tensor,
    which a safetensors file cannot hold; the inspector names that reason for that tensor."""
    import torch

    import gradtrace

    with gradtrace.record() as rec:
        torch.manual_seed(0)
        emb = torch.nn.Embedding(20, 4, sparse=True)
        emb(torch.tensor([1, 3, 3])).pow(2).sum().backward()
    doc = rec.document()
    leaf = next(n for n in doc.graph.nodes if n.name == "emb.weight")
    assert emb.weight.grad.is_sparse and leaf.grad_history and leaf.grad_history[0].key is None
    assert {(e.key, e.reason) for e in doc.tensors.left_out} >= {(f"{leaf.id}.gh0", "dtype")}
    path = Path(doc.save_html(str(tmp_path / "sparse.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        page = opened.page
        page.evaluate(SELECT, "emb.weight")
        note = _root(page).locator("[data-gt=tensors-left-out]")
        expect(note).to_contain_text("were not kept: a dtype or layout")  # not the budget's doing
        expect(note).not_to_contain_text("budget")
        grad = _root(page).locator("[data-gt=tensor]", has_text=".grad at this step")
        expect(grad).to_contain_text("not kept: a dtype or layout a safetensors file cannot hold (complex, sparse")
        value = _root(page).locator("[data-gt=tensor]", has_text="value at the start")
        expect(value).not_to_contain_text("not kept")  # the dense weight itself is kept
        page.screenshot(path=str(artifacts_dir / "tensors-sparse-grad.png"))
        assert opened.errors == []


ORDER = """(name) => new Promise((resolve) => {
  const v = window.gradtrace.viewer, root = document.getElementById('gradtrace').shadowRoot;
  const body = root.querySelector('[data-gt=inspector-body]'), seen = [];
  let heat = null, top = null;
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (!n.querySelectorAll) continue;
      if (!heat && (heat = n.matches('[data-gt=tensor-heatmap]') ? n : n.querySelector('[data-gt=tensor-heatmap]'))) {
        seen.push('heatmap'); top = heat.getBoundingClientRect().top;
      }
      if (n.matches('table.gt-saved') || n.querySelector('table.gt-saved')) {
        seen.push('saved');
        const name = (c) => c.matches('[data-gt=tensors]') || c.querySelector('[data-gt=tensors]') ? 'tensors'
          : c.tagName + (c.className ? '.' + c.className : '');
        requestAnimationFrame(() => resolve({ seen, moved: heat.getBoundingClientRect().top - top,
          order: [...body.children].map(name) }));
      }
    }
  }).observe(body, { childList: true, subtree: true });
  const nodes = v.index.nodes, i = nodes.findIndex((n) => n.name === name);
  v.viewer.selectNode(v.scene.view.vnodes.findIndex((n) => n.refs && n.refs.length === 1 && n.refs[0] === i));
})"""


def test_a_node_selected_at_once_draws_its_first_tensor_before_the_rest(browser: Any, tmp_path: Path,
                                                                        frontend_bundle: Path) -> None:
    """NOTE [the looked-at tensor first] in frontend/src/ui/tensors.js: the sections below the
    tensors (here the saved values' table) come after the first heatmap is drawn, below it, so
    the heatmap does not move; the inspector then shows every section in its usual order."""
    doc = _attention_document()
    path = Path(doc.save_html(str(tmp_path / "attention.html")))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 1000}) as opened:
        got = opened.page.evaluate(ORDER, "SoftmaxBackward0")
        assert got["seen"][:2] == ["heatmap", "saved"], got
        assert got["moved"] == 0, got
        order = got["order"]
        assert order[:2] == ["H3", "DL"] and "tensors" in order, order
        assert order.index("tensors") < order.index("TABLE.gt-saved"), order
        assert order.count("tensors") == 1 and order.count("TABLE.gt-saved") == 1, order
        assert opened.errors == []
