"""Analysis of run documents: what a run means, read from its document alone (no re-run).

This package never imports torch: the web process imports it (``tests/analysis`` checks).
Its results are the schema's :class:`~gradtrace.schema.analysis.Analysis`, written into the
document once where it is built, and only read after that.
"""

from gradtrace.analysis.run import analyze

__all__ = ["analyze"]
