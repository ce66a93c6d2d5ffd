"""Hints: likely mistakes in a run, each told with its evidence and its fix.

Each check is a function of the document alone (:class:`~gradtrace.analysis.docview.DocView`)
returning the hints it finds; :func:`find_hints` runs them all, in the catalogue's order.

NOTE [no false alarms]
    A hint that fires on a correct program teaches the wrong thing, so every check asks for the
    pattern *and* its consequence as the document shows it (the gradient that was summed, the
    leaf that got none, the chain that no backward walked), never for the pattern alone.
    ``tests/capture/test_hints.py`` runs each check on a program that makes the mistake and on a
    near miss that must stay silent, and states which hints each of the 15 lessons raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.dynamics import activations, call_flow, update_ratio
from gradtrace.analysis.hints.errors import (
    backward_non_scalar,
    float64_input,
    input_shape,
    leaf_changed_in_place,
    target_dtype,
    target_out_of_range,
    target_shape,
)
from gradtrace.analysis.hints.flow import eval_mode_in_training, grad_flow, nondiff_ops, train_mode_in_eval
from gradtrace.analysis.hints.grads import clip_before_backward, clip_before_unscale, grad_edited, nonleaf_grad
from gradtrace.analysis.hints.graph import (
    double_softmax,
    graph_kept_alive,
    hand_written_math,
    mse_broadcast,
    nll_on_probabilities,
    sigmoid_bce,
    softmax_wrong_dim,
    zero_gradient_ops,
)
from gradtrace.analysis.hints.init import symmetric_init
from gradtrace.analysis.hints.reshape import view_not_permute
from gradtrace.analysis.hints.training import (
    accumulated,
    backward_without_graph,
    cut_leaf,
    discarded,
    graph_freed,
    optimizer_recreated,
    requires_grad_after_cut,
    stepped_twice,
    threads_unrecorded,
)

Check = Callable[[DocView], list[dict[str, Any]]]

HINT_CHECKS: tuple[Check, ...] = (
    accumulated, discarded, stepped_twice, optimizer_recreated, cut_leaf, requires_grad_after_cut,
    backward_without_graph, leaf_changed_in_place, backward_non_scalar, float64_input, target_dtype, target_shape,
    target_out_of_range, input_shape,
    nonleaf_grad, graph_freed, double_softmax, nll_on_probabilities, softmax_wrong_dim, sigmoid_bce,
    hand_written_math, view_not_permute, mse_broadcast, graph_kept_alive, zero_gradient_ops, nondiff_ops,
    grad_flow, call_flow,
    train_mode_in_eval, eval_mode_in_training, grad_edited, clip_before_backward, clip_before_unscale,
    threads_unrecorded, symmetric_init, update_ratio, activations,
)


def find_hints(view: DocView) -> list[dict[str, Any]]:
    """Every check's hints, in catalogue order, each pitfall said once per line (NOTE [once per
    pitfall and line])."""
    out: list[dict[str, Any]] = []
    for check in HINT_CHECKS:
        out += merged(check(view))
    return out


def merged(hints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """NOTE [once per pitfall and line]
        A loop repeats its line's pitfall in every iteration, and a check that looks at each
        node finds it once per tensor; said three (or six) times it drowns the panel. Hints of
        one code on one line become one: the first, with every node of the others and
        evidence naming each occurrence (``iteration 2``, or the other tensors' titles)."""
    groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
    order: list[tuple[str, Any]] = []
    for h in hints:
        key = (str(h["code"]), h.get("line") if h.get("line") is not None else id(h))
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(h)
    out = []
    for key in order:
        first, *rest = groups[key]
        if not rest:
            out.append(first)
            continue
        nodes = list(first["nodes"])
        for h in rest:
            nodes += [n for n in h["nodes"] if n not in nodes]
        titles = [h["title"] for h in groups[key]]
        evidence = list(first["evidence"])
        evidence.append({"label": "occurrences", "value": f"{len(titles)} on this line"
                         + (f" (iterations 1–{len(titles)})" if len(set(titles)) == 1 else "")})
        if len(set(titles)) > 1:
            evidence.append({"label": "also", "value": "; ".join(dict.fromkeys(titles[1:]))})
        out.append({**first, "nodes": nodes, "evidence": evidence})
    return out
