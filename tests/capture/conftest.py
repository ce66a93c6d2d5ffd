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
    import torch

from gradtrace.capture import native
from rundoc import run_doc


def pytest_report_header() -> str:
    kernels = "the C++ core" if native.default_native() else "the Python twin"
    return f"gradtrace capture kernels: {kernels} (GRADTRACE_KERNELS)"


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    """Capture runs with one intra-op thread, as in the sandbox worker, so float reductions
    (and therefore golden documents) are the same on every machine; restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def run() -> Any:
    """``run(code, **kw)``: run_snippet with a check that the document is valid and stable."""
    from gradtrace.schema import RunDocument, document_id

    def _run(code: str, **kw: Any) -> dict[str, Any]:
        doc = run_doc(code, **kw)
        RunDocument.model_validate(doc)
        assert doc["id"] == document_id(doc)
        return doc

    return _run
