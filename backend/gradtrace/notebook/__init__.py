"""gradtrace in notebooks: the widget, ``show()``, the summary view and the self-contained HTML
file (the ``%%gradtrace`` cell magic, which also records, is :mod:`gradtrace.magic`).

::

    import gradtrace
    with gradtrace.record() as rec:
        ...
    w = gradtrace.show(rec)      # graph, timeline, inspector, code: no server, no port
    w.step = 3                   # moves the view; clicking a node sets w.selected
    rec.document().save_html("lesson.html")

    %load_ext gradtrace
    %%gradtrace w                # records the cell, shows it, binds the widget to `w`

The widget is an anywidget (``pip install 'gradtrace[notebook]'``); its script and CSS are
the page's own modules, bundled by ``frontend/build.mjs`` into ``gradtrace/frontend/dist`` and
shipped in the wheel. Without anywidget, ``show()`` answers a static picture of the graph.
This package imports torch only to hand tensor values back (``w.selected``).
"""

from __future__ import annotations

from gradtrace.notebook.html import save_html, standalone_html
from gradtrace.notebook.show import show

__all__ = ["save_html", "show", "standalone_html"]
