"""``gradtrace.show()`` and the ``%%gradtrace`` cell magic (``%load_ext gradtrace``)."""

from __future__ import annotations

import shlex
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
        from gradtrace.client import render_html
        from gradtrace.schema import RunDocument

        return render_html(RunDocument.model_validate(self.document), run_url=self.run_url)


def show(obj: Any, *, step: int | None = None, height: str = "620px", run_url: str | None = None) -> Any:
    """Show a run in the notebook: a ``RunDocument``, a ``gradtrace.record`` block that has run,
    a document dict or its JSON. Answers the widget (``w.step``, ``w.selected``), or without
    anywidget a static picture (said once, on stderr)."""
    global _said_no_anywidget
    run_url = run_url or getattr(obj, "_run_url", None)
    if not widget_available():
        if not _said_no_anywidget:
            _said_no_anywidget = True
            print("gradtrace: anywidget is not installed, so runs show as a static picture; "
                  "`pip install 'gradtrace[notebook]'` gives the interactive widget.", file=sys.stderr)
        return StaticRun(as_document(obj), run_url)
    from gradtrace.notebook.widget import GradtraceWidget

    return GradtraceWidget(obj, step=step, run_url=run_url, height=height)


def gradtrace_cell(line: str, cell: str) -> Any:
    """``%%gradtrace [NAME] [--python] [--height 600px]``: run the cell under
    ``gradtrace.record()`` and show it; ``NAME`` also binds the widget to that variable.
    ``--python`` records on the pure-Python kernels instead of the C++ core."""
    from IPython import get_ipython
    from IPython.display import display

    from gradtrace.capture import record

    ip = get_ipython()
    args = shlex.split(line)
    name = None
    native: bool | None = None
    height = "620px"
    while args:
        a = args.pop(0)
        if a == "--python":
            native = False
        elif a == "--height" and args:
            height = args.pop(0)
        elif a.isidentifier() and name is None:
            name = a
        else:
            raise ValueError(f"%%gradtrace: unknown argument {a!r} (usage: %%gradtrace [NAME] [--python] "
                             "[--height 600px])")
    filename = ip.compile.cache(cell) if hasattr(ip.compile, "cache") else "<gradtrace-cell>"
    code = ip.compile(ip.transform_cell(cell), filename, "exec") if cell.strip() else None
    error: BaseException | None = None
    with record(native=native, _filename=filename, _namespace=ip.user_ns) as rec:
        try:
            if code is not None:
                exec(code, ip.user_ns)
        except Exception as exc:  # the run's error, shown after the widget (a LimitReached is no
            rec.note_error(exc)   # Exception: the block ends the recording and notes graph_limit)
            error = exc
    doc = rec.document_dict(code=cell)
    shown = show(doc, height=height)
    if name is not None:
        ip.user_ns[name] = shown
    if error is not None:
        display(shown)  # type: ignore[no-untyped-call]
        raise error
    return shown


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gradtrace``: registers the ``%%gradtrace`` cell magic."""
    ipython.register_magic_function(gradtrace_cell, magic_kind="cell", magic_name="gradtrace")
