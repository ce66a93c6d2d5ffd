"""Analysis: pure functions that read run documents and return typed results. Never torch.

What belongs here: everything that *judges or explains a finished run from its document*. One
room per concept, each a subpackage with its entry point in its ``__init__``: ``hints/`` (likely
mistakes), ``explain/`` (a backward node's local rule with its numbers), ``compare/`` (two runs
side by side), ``goals/`` (an exercise's goals), ``nonfinite/`` (the first NaN or infinity,
forward and backward, and why), ``dynamics/`` (a loop's series). At the top level:
:func:`analyze` (``run.py``, the document's ``analysis`` field), what several rooms read
(``docview.py``, ``numbers.py``: numbers as documents spell them and the float32 tolerances,
``local_derivatives.py``), starved leaves (``starved.py``), blocks
with gradients off (``gradoff.py``) and the gradient check's verdict (``gradcheck.py``). Each
module takes a run document as a plain ``dict`` (parsed JSON, the shape ``gradtrace.schema``
validates) and returns frozen dataclasses, schema models or plain values; it reads nothing from
disk, the network or the clock.

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
