"""The self-contained HTML file of a run: ``doc.save_html("lesson.html")``.

One file, from the template ``frontend/static/standalone.html`` that the page's Export → HTML
fills too (``frontend/src/export-html.js``): the viewer's script (``dist/standalone.js``, which
carries the layout worker and the CSS) inline, and the document as gzip-compressed base64 in a
``<script type="application/gzip+base64">`` element. It opens offline and plays the whole run.
"""

from __future__ import annotations

import base64
import html
import os
import re
from pathlib import Path
from typing import Any

from gradtrace.frontend import STATIC
from gradtrace.notebook.assets import asset_text
from gradtrace.notebook.documents import as_document, compressed
from gradtrace.version import __version__


def standalone_html(document: Any, *, title: str | None = None) -> str:
    """The HTML text of the self-contained file (see the module docstring)."""
    doc = as_document(document)
    # An inline script ends at the first "</script": the bundle never holds one outside strings.
    fill = {"VERSION": html.escape(__version__),
            "TITLE": html.escape(title or f"gradtrace · run {doc.get('id', '')}".strip()),
            "PAYLOAD": base64.b64encode(compressed(doc)).decode("ascii"),
            "SCRIPT": asset_text("standalone.js").replace("</script", "<\\/script")}
    template = (STATIC / "standalone.html").read_text(encoding="utf-8")
    return re.sub(r"@(VERSION|TITLE|PAYLOAD|SCRIPT)@", lambda m: fill[m.group(1)], template)


def save_html(document: Any, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the self-contained HTML file of ``document`` to ``path``; answers the path."""
    out = Path(path)
    out.write_text(standalone_html(document, title=title), encoding="utf-8")
    return out
