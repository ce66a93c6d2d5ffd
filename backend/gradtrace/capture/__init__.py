"""Capture: run PyTorch code while recording every autograd node and every backward pass.

Two ways in, one way out:

* :func:`run_snippet` (the sandbox worker, ``gradtrace run``): execute a snippet, answer with
  its :class:`CapturedDocument`.
* :class:`record` (notebooks, public as ``gradtrace.record``): a ``with`` block around your own
  code; ``rec.document()`` gives the pydantic ``RunDocument``, built from that same object.

Every recording leaves as one :class:`CapturedDocument` (NOTE [capture's one exit] in
captured.py): the document without its id, its graph and events the core's canonical JSON,
and the tensor file's bytes. Its readers parse it, or write it out, at their own edge.

Pipeline inside this package::

    snippet / session   run the code under the recorder (stdout cap, statuses, gc, cleanup)
    mode, modules       taps: TorchFunctionMode after each torch call, module pre/post hooks
    timeline            lines and modules by autograd sequence number (settrace, snippet only)
    recorder, graph     nodes in creation order, edges, saved tensors, node hooks, passes
    events, values      backward events; tensors encoded as TensorValues (lazily when small)
    diagnose            in-place / freed-graph errors as data (node, saved tensors, line)
    document            the run document dict (graph and events as the core's JSON)
    captured            capture's one exit: that dict, its id and canonical JSON, the tensor file

This package imports torch; the web process must never import it.
"""

from __future__ import annotations

from gradtrace.capture.captured import CapturedDocument
from gradtrace.capture.session import record
from gradtrace.capture.snippet import run_snippet

WARM_UP_SNIPPET = """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
lin = nn.Linear(2, 2)
y = F.relu(lin(x * x)).sum()
y.backward()
print(x.grad)
"""


WARM_UP_TENSOR_BUDGET = 1 << 20
"""The warm-up keeps its tensors as a service run does (the file's code paths are warmed too)."""


def warm_up() -> None:
    """Run a tiny snippet through the whole recorder (mode, module hooks, node hooks, values,
    validation, the tensor file), so a fork server pays first-use costs once, before forking."""
    run_snippet(WARM_UP_SNIPPET, seed=0, tensor_budget=WARM_UP_TENSOR_BUDGET).canonical_with_id()


__all__ = ["WARM_UP_SNIPPET", "WARM_UP_TENSOR_BUDGET", "CapturedDocument", "record", "run_snippet", "warm_up"]
