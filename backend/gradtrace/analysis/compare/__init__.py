"""Comparing two runs: pair their nodes, measure every value and gradient, find where they first
diverge (the answer's models are ``schema/compare.py``).

The entry point is :func:`compare_documents` (``analysis/compare/documents.py``). Beside it, what a
caller needs to hand it its documents: :func:`read_for_compare` reads a stored document with only
the fields the comparison reads, and :func:`check_document` refuses a document given whole before
it is validated; :func:`memory_timeline` is one run's saved-tensor memory, which the comparison
reports for both runs and a goal judges for one. Callers import these from here, never from the
modules inside (``tests/test_layering.py``).
"""

from gradtrace.analysis.compare.documents import check_document, compare_documents
from gradtrace.analysis.compare.memory import memory_timeline
from gradtrace.analysis.compare.read import read_for_compare

__all__ = ["check_document", "compare_documents", "memory_timeline", "read_for_compare"]
