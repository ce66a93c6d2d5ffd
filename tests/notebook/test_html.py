"""The self-contained HTML file: written by ``doc.save_html``, opened from disk with the network
off, it draws the run and plays it to the end."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import gradtrace
from browser.pageutil import open_saved_file
from pageguard import wait_until

pytestmark = pytest.mark.browser


def _recorded() -> gradtrace.RunDocument:
    with gradtrace.record() as rec:
        w = torch.tensor([0.5, -1.0], requires_grad=True)
        loss = (w.tanh() * 3).sum()
        loss.backward()
    return rec.document()


def test_the_file_holds_the_document_and_no_outside_reference(tmp_path: Path, widget_bundles: Path) -> None:
    doc = _recorded()
    path = Path(doc.save_html(str(tmp_path / "lesson.html")))
    text = path.read_text()
    payload = re.search(r'<script type="application/gzip\+base64" id="gt-run">([^<]*)</script>', text)
    assert payload is not None
    embedded = json.loads(gzip.decompress(base64.b64decode(payload.group(1))))
    assert embedded["id"] == doc.id and len(embedded["graph"]["nodes"]) == len(doc.graph.nodes)
    assert not re.search(r'(src|href)="https?:', text), "nothing is loaded from outside the file"
    assert text.count("<script") == 4  # the viewer, the run, the explanations and the tensors it carries
    element = r'<script type="application/octet-stream\+base64" id="gt-tensors" data-info="[^"]*">([^<]*)</script>'
    tensors = re.search(element, text)
    assert tensors is not None and base64.b64decode(tensors.group(1)) == doc.tensor_bytes()
    carried = re.search(r'<script type="application/gzip\+base64" id="gt-explain">([^<]*)</script>', text)
    assert carried is not None
    bundle = json.loads(gzip.decompress(base64.b64decode(carried.group(1))))
    ops = {n.id: n.name for n in doc.graph.nodes}
    assert {ops[i] for i in bundle["nodes"]} == {n.name for n in doc.graph.nodes if n.kind == "function"}
    tanh = next(e for i, e in bundle["nodes"].items() if ops[i] == "TanhBackward0")
    assert bundle["rules"]["TanhBackward0"] == ["grad_self = grad_out · (1 − result²)"]
    assert tanh["inputs"][0]["instance"].startswith("3 · (1 − ") and len(tanh["inputs"][0]["elements"]) == 2
    assert bundle["skipped_nodes"] == 0


def test_the_saved_file_opens_offline_and_plays_the_whole_run(browser: Any, tmp_path: Path,
                                                               widget_bundles: Path) -> None:
    doc = _recorded()
    path = tmp_path / "lesson.html"
    doc.save_html(str(path))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 720}) as opened:
        page = opened.page
        info = page.evaluate("() => { const v = window.gradtrace.viewer; "
                             "return { nodes: v.index.nodes.length, N: v.timeline.N, k: v.player.k }; }")
        assert info["nodes"] == len(doc.graph.nodes) and info["N"] == info["k"] > 0
        graph = page.locator("#gradtrace #graph")
        graph.focus()
        page.keyboard.press("Home")
        page.locator("#gradtrace #tl-speed").select_option("4")
        graph.focus()
        page.keyboard.press(" ")  # play from the start
        wait_until(page, "window.gradtrace.viewer.player.k > 0")
        done = f"window.gradtrace.viewer.player.k === {info['N']} && !window.gradtrace.viewer.player.playing"
        wait_until(page, done, timeout=info["N"] * 1000 + 5000)
        label = page.locator("#gradtrace #tl-label").inner_text()
        assert label.startswith(f"Step {info['N']}/{info['N']}")
        assert "backward" in label
        # The page's own markup (templates/viewer.html): the step's sentence and the search box too.
        assert "w.grad" in page.locator("#gradtrace #sentence").inner_text()
        page.locator("#gradtrace #search").fill("Tanh")
        page.locator("#gradtrace #search").press("Enter")
        assert page.locator("#gradtrace #search-count").inner_text().strip()
        assert page.locator("#gradtrace #examples").is_hidden()  # the page's gallery stays the page's
    assert opened.errors == []
    assert all(u.startswith(("file:", "blob:", "data:")) for u in opened.requests), opened.requests


@pytest.mark.parametrize(("scheme", "canvas"), [("light", "#ffffff"), ("dark", "#171a22")])
def test_the_viewer_follows_the_theme_around_it(browser: Any, tmp_path: Path, widget_bundles: Path,
                                                scheme: str, canvas: str) -> None:
    path = tmp_path / "lesson.html"
    _recorded().save_html(str(path))
    with open_saved_file(browser, path, color_scheme=scheme) as opened:
        assert opened.page.evaluate("document.getElementById('gradtrace').dataset.theme") == scheme
        assert opened.page.evaluate("window.gradtrace.viewer.canvas.pal.bg") == canvas


def test_the_saved_file_shows_the_first_nan_and_its_badge(browser: Any, tmp_path: Path,
                                                          widget_bundles: Path, artifacts_dir: Path) -> None:
    """The analysis recorded in process (capture's document) travels in the file and shows."""
    with gradtrace.record() as rec:
        x = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
        y = torch.where(x > 0, x.sqrt(), 0.0)
        y.sum().backward()
    doc = rec.document()
    assert doc.analysis is not None and doc.analysis.nonfinite[0].name == "SqrtBackward0"
    path = tmp_path / "where.html"
    doc.save_html(str(path))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 800}) as opened:
        page = opened.page
        root = page.locator("#gradtrace")
        assert root.locator("#status-badge").inner_text() == "ok · x.grad has NaN"
        assert "first NaN in backward: SqrtBackward0" in root.locator("#findings").inner_text()
        assert root.locator(".gt-nan-mark").count() == 1
        page.screenshot(path=str(artifacts_dir / "findings-saved-html.png"))


def test_the_saved_file_explains_a_node_offline(browser: Any, tmp_path: Path, widget_bundles: Path,
                                                artifacts_dir: Path) -> None:
    """"Explain this node" with no service: the file's carried explanations, at a chosen element."""
    with gradtrace.record() as rec:
        x = torch.tensor([1.5, -2.0], requires_grad=True)
        loss = (x ** 3 * 2).sum()
        loss.backward()
    doc = rec.document()
    pow_id = next(n.id for n in doc.graph.nodes if n.name == "PowBackward0")
    path = tmp_path / "pow.html"
    doc.save_html(str(path))
    with open_saved_file(browser, path, viewport={"width": 1280, "height": 800}) as opened:
        page = opened.page
        page.evaluate(f"window.gradtrace.viewer.selectById('{pow_id}')")
        root = page.locator("#gradtrace")
        instance = root.locator("[data-gt=explain-instance]")
        instance.first.wait_for(timeout=10_000)
        assert root.locator(".gt-explain-rule").first.inner_text() == \
            "grad_self = grad_out · exponent · self^(exponent − 1)"
        assert instance.first.inner_text() == "→ at [0]: 2 · 3 · 1.5^2 = 13.5"
        root.locator("[data-gt=explain-element]").select_option("1")
        wait_until(page, "document.getElementById('gradtrace').shadowRoot"
                               ".querySelector('[data-gt=explain-instance]').textContent.includes('at [1]')")
        assert instance.first.inner_text() == "→ at [1]: 2 · 3 · (-2)^2 = 24"
        root.locator(".gt-explain").scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts_dir / "explain-saved-html.png"))
