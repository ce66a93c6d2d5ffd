"""Hints: likely mistakes in a run, each told with its evidence and its fix.

The entry point is :func:`find_hints` (``analysis/hints/catalogue.py`` runs every check in the
catalogue's order). Callers import it from here, never from the modules inside
(``tests/test_layering.py``).
"""

from gradtrace.analysis.hints.catalogue import find_hints

__all__ = ["find_hints"]
