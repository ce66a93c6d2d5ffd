"""The notebook's fallback without the widget (gradtrace/notebook/summary.py, picture.py): its
counts in good English and its picture naming nodes as the page does, never by document id."""

from __future__ import annotations

import re

import torch

import gradtrace
from gradtrace.notebook.summary import render_html


def test_the_fallback_counts_in_the_right_number_and_names_the_output() -> None:
    with gradtrace.record() as rec:
        x = torch.tensor(2.0, requires_grad=True)
        (x * x).backward()
    doc = rec.document()
    text = render_html(doc)
    head = re.sub(r"<[^>]+>", "", text.split("<svg", 1)[0])
    assert "1 leaf ·" in head and "1 backward pass ·" in head, head
    assert "1 leaves" not in head and "1 backward passes" not in head
    labels = re.findall(r'text-anchor="middle" fill="#1b1e28">([^<]*)<', text)
    ids = {n.id for n in doc.graph.nodes}
    assert "output" in labels and not ids & set(labels), labels
