"""The self-contained HTML file of a run: ``doc.save_html("lesson.html")``.

One file: the viewer's script (``dist/standalone.js``, which carries the layout worker and the
CSS) inline, and the document as gzip-compressed base64 in a ``<script type=
"application/gzip+base64">`` element. It opens offline, from disk, and plays the whole run.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path
from typing import Any

from gradtrace import __version__
from gradtrace.notebook.assets import asset_text
from gradtrace.notebook.documents import as_document, compressed

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="gradtrace {version}">
<title>{title}</title>
<style>html, body {{ margin: 0; height: 100%; }} body {{ padding: 8px; box-sizing: border-box; }}
@media (prefers-color-scheme: dark) {{ body {{ background: #14161d; color: #e6e8ef; }} }}</style>
</head>
<body>
<div id="gradtrace"></div>
<script type="application/gzip+base64" id="gt-run">{payload}</script>
<script>{script}</script>
</body>
</html>
"""


def standalone_html(document: Any, *, title: str | None = None) -> str:
    """The HTML text of the self-contained file (see the module docstring)."""
    doc = as_document(document)
    payload = base64.b64encode(compressed(doc)).decode("ascii")
    # An inline script ends at the first "</script": the bundle never holds one outside strings.
    script = asset_text("standalone.js").replace("</script", "<\\/script")
    name = title or f"gradtrace · run {doc.get('id', '')}".strip()
    return _PAGE.format(version=__version__, title=html.escape(name), payload=payload, script=script)


def save_html(document: Any, path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Write the self-contained HTML file of ``document`` to ``path``; answers the path."""
    out = Path(path)
    out.write_text(standalone_html(document, title=title), encoding="utf-8")
    return out
