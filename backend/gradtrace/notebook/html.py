"""The self-contained HTML file of a run: ``doc.save_html("lesson.html")``.

One file, from the template ``frontend/static/standalone.html`` that the page's Export → HTML
fills too (``frontend/src/export-html.js``): the viewer's script (``dist/standalone.js``, which
carries the layout worker and the CSS) inline, and the document as gzip-compressed base64 in a
``<script type="application/gzip+base64">`` element. It opens offline and plays the whole run.

It also carries the explanations of its backward nodes ("Explain this node"), worked out by the
torch-free analysis package when the file is written, within a size budget, in a second data
element (``id="gt-explain"``; NOTE [explanations carried offline] in
``analysis/explain/offline.py``): the page only reads them. And the run's tensor file, within
its own byte budget (``id="gt-tensors"``; NOTE [tensors carried offline] in
``carried_tensors.py``), so the inspector shows every number it kept offline.

It carries its own Content-Security-Policy in a ``<meta>`` tag: the hashes of its inline script
and the template's style (the viewer adopts its CSS as a constructed style sheet), nothing
remote, no eval (NOTE [saved file policy] in ``frontend/standalone-csp.mjs``,
which writes the policy to ``dist/standalone-csp.txt`` at build time).
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import os
import re
from pathlib import Path
from typing import Any

from gradtrace.analysis.explain import carried_explanations
from gradtrace.frontend import STATIC
from gradtrace.notebook.assets import asset_text
from gradtrace.notebook.carried_tensors import TENSOR_BUDGET, tensors_element
from gradtrace.notebook.documents import ShownDocument, shown_document
from gradtrace.version import __version__


def standalone_html(document: Any, *, title: str | None = None, tensor_budget: int = TENSOR_BUDGET) -> str:
    """The HTML text of the self-contained file (see the module docstring); at most
    ``tensor_budget`` bytes of the run's tensors (``doc.tensor_bytes()``) go in it."""
    shown = shown_document(document)  # NOTE [one document path]: its bytes as they are
    # An inline script ends at the first "</script": the bundle never holds one outside strings.
    fill = {"CSP": html.escape(asset_text("standalone-csp.txt").strip()),
            "VERSION": html.escape(__version__),
            "TITLE": html.escape(title or f"gradtrace · run {_document_id(document, shown)}".strip()),
            "PAYLOAD": base64.b64encode(shown.compressed()).decode("ascii"),
            "SCRIPT": asset_text("standalone.js").replace("</script", "<\\/script")}
    template = (STATIC / "standalone.html").read_text(encoding="utf-8")
    page = re.sub(r"@(CSP|VERSION|TITLE|PAYLOAD|SCRIPT)@", lambda m: fill[m.group(1)], template)
    page = with_explanations(page, carried_explanations(shown.doc))
    tensor_bytes = getattr(document, "tensor_bytes", None)
    element = tensors_element(tensor_bytes() if callable(tensor_bytes) else None, tensor_budget)
    return page.replace(RUN_ELEMENT, element + RUN_ELEMENT, 1) if element else page


RUN_ELEMENT = '<script type="application/gzip+base64" id="gt-run">'


def with_explanations(page: str, bundle: dict[str, Any]) -> str:
    """``page`` with ``bundle`` (:func:`carried_explanations`) as a data element before the
    run's: gzip-compressed base64 JSON, never run, so the file's policy needs no hash for it
    (``frontend/src/export-html.js`` adds the service's the same way)."""
    data = gzip.compress(json.dumps(bundle, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0)
    payload = base64.b64encode(data).decode("ascii")
    element = f'<script type="application/gzip+base64" id="gt-explain">{payload}</script>\n'
    return page.replace(RUN_ELEMENT, element + RUN_ELEMENT, 1)


def _document_id(document: Any, shown: ShownDocument) -> str:
    """The id of what is saved: read from the model when there is one (no parse of 4 MB)."""
    doc_id = getattr(document, "id", None)
    return doc_id if isinstance(doc_id, str) else str(shown.doc.get("id", "") or "")


def save_html(document: Any, path: str | os.PathLike[str], *, title: str | None = None,
              tensor_budget: int = TENSOR_BUDGET) -> Path:
    """Write the self-contained HTML file of ``document`` to ``path``; answers the path. At
    most ``tensor_budget`` bytes of its tensors go in (NOTE [tensors carried offline])."""
    out = Path(path)
    out.write_text(standalone_html(document, title=title, tensor_budget=tensor_budget), encoding="utf-8")
    return out
