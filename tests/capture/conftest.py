"""Capture tests run snippets in this process, through the real recorder (no sandbox).

torch 2.13 without NumPy warns once, at import, that it could not load NumPy; pytest turns
warnings into errors, so torch is imported here once with exactly that warning silenced.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch  # noqa: F401  (imported for its side effect, see above)

from gradtrace.capture import run_snippet  # noqa: E402


@pytest.fixture
def run() -> Any:
    """``run(code, **kw)``: run_snippet with a check that the document is valid and stable."""
    from gradtrace.schema import RunDocument, document_id

    def _run(code: str, **kw: Any) -> dict[str, Any]:
        doc = run_snippet(code, **kw)
        RunDocument.model_validate(doc)
        assert doc["id"] == document_id(doc)
        return doc

    return _run
