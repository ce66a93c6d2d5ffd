"""Fixtures of the notebook tests (``notebook/labutil.py``): JupyterLab and the widget bundles."""

from notebook.labutil import jupyterlab, widget_bundles

__all__ = ["jupyterlab", "widget_bundles"]
