"""Hints: likely mistakes in a run, each told with its evidence and its fix.

Each rule is a function of the document alone (:class:`~gradtrace.analysis.docview.DocView`)
returning the hints it finds; :func:`find_hints` runs them all, in the catalogue's order.

NOTE [no false alarms]
    A hint that fires on a correct program teaches the wrong thing, so every rule asks for the
    pattern *and* its consequence as the document shows it (the gradient that was summed, the
    leaf that got none, the chain that no backward walked), never for the pattern alone.
    ``tests/capture/test_hints.py`` runs each rule on a program that makes the mistake and on a
    near miss that must stay silent, and states which hints each of the 15 lessons raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints_flow import grad_flow, nondiff_ops, train_mode_in_eval
from gradtrace.analysis.hints_graph import (
    double_softmax,
    graph_kept_alive,
    hand_written_math,
    mse_broadcast,
    sigmoid_bce,
    zero_gradient_ops,
)
from gradtrace.analysis.hints_training import (
    accumulated,
    cut_leaf,
    grad_edited,
    graph_freed,
    nonleaf_grad,
    requires_grad_after_cut,
    threads_unrecorded,
)

Rule = Callable[[DocView], list[dict[str, Any]]]

RULES: tuple[Rule, ...] = (
    accumulated, cut_leaf, requires_grad_after_cut, nonleaf_grad, graph_freed, double_softmax, sigmoid_bce,
    hand_written_math, mse_broadcast, graph_kept_alive, zero_gradient_ops, nondiff_ops, grad_flow, train_mode_in_eval,
    grad_edited, threads_unrecorded,
)


def find_hints(view: DocView) -> list[dict[str, Any]]:
    """Every rule's hints, in catalogue order."""
    out: list[dict[str, Any]] = []
    for rule in RULES:
        out += rule(view)
    return out
