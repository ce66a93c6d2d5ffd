"""Explaining a backward node: its local backward rule, worked out with the recorded numbers.

The entry point is :func:`explain_node` (one node, one element, on request: NOTE [explain on
request] in ``analysis/explain/node.py``); :func:`carried_explanations` is the same answers for
every node at once, bounded, for a file that has no service to ask (NOTE [explanations carried
offline] in ``analysis/explain/offline.py``). Callers import these from here, never from the
modules inside (``tests/test_layering.py``).
"""

from gradtrace.analysis.explain.node import explain_node
from gradtrace.analysis.explain.offline import carried_explanations

__all__ = ["carried_explanations", "explain_node"]
