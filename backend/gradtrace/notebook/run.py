"""A run document as a notebook shows it: the schema's :class:`RunDocument` with its views.

NOTE [views of a document]
    The schema is the bottom layer: the web process, storage and capture load it, and it
    imports nothing of theirs. How a document looks in a notebook (an HTML summary, a
    self-contained HTML file) belongs to this layer, so the documents handed to notebook users
    (``rec.document()``, ``Client.run()``) are this subclass, which adds the views; any other
    ``RunDocument`` is shown with :func:`gradtrace.notebook.show` or saved with
    :func:`gradtrace.notebook.save_html`.
"""

from __future__ import annotations

from gradtrace.schema import RunDocument


class NotebookRunDocument(RunDocument):
    """A :class:`RunDocument` that shows itself in a notebook and saves itself as a page."""

    def _repr_html_(self) -> str:
        """In a notebook, a document shows a link to its page and a summary of its graph."""
        from gradtrace.client import render_html

        return render_html(self)

    def save_html(self, path: str, *, title: str | None = None) -> str:
        """Write this run as one self-contained HTML file that opens offline and plays it
        (:mod:`gradtrace.notebook.html`); answers the path."""
        from gradtrace.notebook.html import save_html

        return str(save_html(self, path, title=title))
