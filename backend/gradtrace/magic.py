"""The ``%%gradtrace`` cell magic (``%load_ext gradtrace``): record the cell, then show it.

It records with :mod:`gradtrace.capture` and shows with :mod:`gradtrace.notebook`, so it sits
above both (NOTE [the layer order] in ``tests/test_layering.py``); the notebook package itself
never records.
"""

from __future__ import annotations

import shlex
from typing import Any

from gradtrace.notebook.show import show


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
    doc = rec.document(code=cell)
    kept = rec.recorder.tensor_file  # the inspector's numbers, asked for by key (notebook/widget.py)
    shown = show(doc, height=height, tensors=kept.data if kept is not None else None)
    if hasattr(type(shown), "checker"):  # the widget (anywidget is installed): its "Check gradient"
        from gradtrace.gradcheck.notebook import enable_checks  # re-runs the cell's code

        enable_checks(shown)
    if name is not None:
        ip.user_ns[name] = shown
    if error is not None:
        display(shown)  # type: ignore[no-untyped-call]
        raise error
    return shown


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gradtrace``: registers the ``%%gradtrace`` cell magic."""
    ipython.register_magic_function(gradtrace_cell, magic_kind="cell", magic_name="gradtrace")
