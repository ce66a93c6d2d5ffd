"""The gradient check's torch-free side: which target a node of a stored run names and where the
answer lands on the run (:mod:`.runs`), and the verdict from the measured numbers
(:mod:`.verdict`). The check that measures them is ``gradtrace/gradcheck/`` (it needs torch)."""

from __future__ import annotations

from gradtrace.analysis.gradcheck.runs import (
    for_the_rerun,
    forward_target,
    is_custom_function,
    node_id_for,
    place_on_run,
    spec_for_target,
    target_for_node,
)

__all__ = ["for_the_rerun", "forward_target", "is_custom_function", "node_id_for", "place_on_run",
           "spec_for_target", "target_for_node"]
