"""Analysis: pure functions that read run documents and return typed results. Never torch.

What belongs here: everything that *judges or explains a finished run from its document* —
hints, the first non-finite values, comparisons of two runs (``docdiff`` aligns two documents
and holds the float tolerances), explanations. Each module takes a run document as a plain
``dict`` (parsed JSON, the shape ``gradtrace.schema`` validates) and returns frozen dataclasses
or plain values; it reads nothing from disk, the network or the clock.

Why a package of its own: the web process (``gradtrace.api``) imports it, and the web process
never imports torch (``tests/test_torch_free.py`` fails if this package, the FastAPI app, api/,
storage/, schema/ or the client does). So a module here imports only the standard library and
``gradtrace.schema``/``gradtrace.errors`` — never capture/, sandbox/, queue/, api/, storage/ or
notebook/ (the layer order in ``tests/test_layering.py`` says so too). Anything that needs torch
(re-running a snippet, asking ``torch.autograd`` for the answer) is a sandbox job kind instead
(NOTE [adding a job kind] in ``gradtrace/jobs.py``).
"""

from gradtrace.analysis.run import analyze

__all__ = ["analyze"]
