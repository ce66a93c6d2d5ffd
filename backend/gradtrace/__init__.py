"""gradtrace: record PyTorch's dynamic autograd graph, serve it, share it, animate it.

Pipeline, one package per stage::

    snippet → sandbox → capture → schema (graph document) → storage → api / pages
            → browser layout → render → animate           (frontend/)

Importing ``gradtrace`` is cheap and never imports torch: the web process imports it.
``gradtrace.record`` (which needs torch) and ``gradtrace.Client`` load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradtrace.version import __version__

if TYPE_CHECKING:
    from gradtrace.capture import record
    from gradtrace.client import Client, GradtraceAPIError
    from gradtrace.compare_runs import compare
    from gradtrace.gradcheck import gradcheck
    from gradtrace.notebook.show import show
    from gradtrace.schema import RunDocument

__all__ = ["Client", "GradtraceAPIError", "RunDocument", "__version__", "compare", "gradcheck",
           "load_ipython_extension", "record", "show"]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gradtrace``: the ``%%gradtrace`` cell magic (:mod:`gradtrace.magic`)."""
    from gradtrace.magic import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    """Load the public names lazily, so ``import gradtrace`` stays free of torch."""
    if name == "record":
        from gradtrace.capture import record

        return record
    if name in ("Client", "GradtraceAPIError"):
        from gradtrace import client

        return getattr(client, name)
    if name == "compare":
        from gradtrace.compare_runs import compare

        return compare
    if name == "gradcheck":  # the package itself, callable: NOTE [a package you can call] in gradcheck/
        import gradtrace.gradcheck as package

        return package
    if name == "show":
        from gradtrace.notebook.show import show

        return show
    if name == "RunDocument":
        from gradtrace.schema import RunDocument

        return RunDocument
    raise AttributeError(f"module 'gradtrace' has no attribute {name!r}")
