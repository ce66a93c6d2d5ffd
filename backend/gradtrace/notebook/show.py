"""``gradtrace.show()``: a run in the notebook, as the widget or as a static summary."""

from __future__ import annotations

import sys
from typing import Any

from gradtrace.notebook.documents import as_document

_said_no_anywidget = False


def widget_available() -> bool:
    """Whether anywidget is installed (``pip install 'gradtrace[notebook]'``)."""
    try:
        import anywidget  # noqa: F401
    except ImportError:
        return False
    return True


class StaticRun:
    """What ``show()`` answers without anywidget: the summary and a picture of the graph."""

    def __init__(self, document: dict[str, Any], run_url: str | None = None) -> None:
        self.document = document
        self.run_url = run_url

    def _repr_html_(self) -> str:
        from gradtrace.notebook.summary import render_html
        from gradtrace.schema import RunDocument

        return render_html(RunDocument.model_validate(self.document), run_url=self.run_url)


def show(obj: Any, *, step: int | None = None, height: str = "620px", run_url: str | None = None,
         tensors: bytes | None = None) -> Any:
    """Show a run in the notebook: a ``RunDocument``, a ``gradtrace.record`` block that has run,
    a document dict or its JSON. Answers the widget (``w.step``, ``w.selected``), or without
    anywidget a static picture (said once, on stderr). The widget's inspector asks the kernel
    for the run's tensors: ``obj``'s tensor file, or ``tensors`` (safetensors bytes)."""
    global _said_no_anywidget
    run_url = run_url or getattr(obj, "_run_url", None)
    if not widget_available():
        if not _said_no_anywidget:
            _said_no_anywidget = True
            print("gradtrace: anywidget is not installed, so runs show as a static picture; "
                  "`pip install 'gradtrace[notebook]'` gives the interactive widget.", file=sys.stderr)
        return StaticRun(as_document(obj), run_url)
    from gradtrace.notebook.widget import GradtraceWidget

    return GradtraceWidget(obj, step=step, run_url=run_url, height=height, tensors=tensors)
