"""Hints read from the graph's shape: ops chained where a fused, stable op exists, a loss whose
input was broadcast, a graph kept alive across iterations, ops whose gradient is zero."""

from __future__ import annotations

import re
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint, shape


def _pairs(view: DocView, first: set[str], then: set[str]) -> list[tuple[str, str]]:
    """``(a, b)`` for each node ``a`` named in ``first`` whose output feeds ``b`` named in ``then``."""
    return [(str(n["id"]), c) for n in view.named(*first)
            for c in view.consumers.get(str(n["id"]), []) if view.name(c) in then]


_SQUASHED_TWICE = {
    "SoftmaxBackward0": (
        "softmax", "softmax applied twice",
        "The loss applies log_softmax to its input, and its input is already a softmax: the "
        "probabilities are squashed twice, so the loss barely moves and gradients shrink."),
    "SigmoidBackward0": (
        "sigmoid", "sigmoid, then CrossEntropyLoss: it takes logits",
        "The loss applies log_softmax to its input, and its input is a sigmoid's output: every "
        "logit is squashed into (0, 1) first, so the softmax of any row is nearly uniform (no "
        "class can get more than e/(e + C − 1) of it), the loss cannot fall far and the "
        "gradients shrink."),
}
"""What a cross-entropy's log_softmax should not be given, each with its words."""


def double_softmax(view: DocView) -> list[dict[str, Any]]:
    """softmax fed to cross_entropy, which applies log_softmax itself; and a sigmoid fed to it,
    squashing the logits into (0, 1) before the softmax."""
    out = []
    for first in ("SoftmaxBackward0", "SigmoidBackward0"):
        what, title, message = _SQUASHED_TWICE[first]
        for s, log in _pairs(view, {first}, {"LogSoftmaxBackward0"}):
            line = view.by_id[log].get("line")
            out.append(hint(
                "double-softmax", "warning", title, message, line=line, nodes=[s, log],
                evidence=[(what, f"line {view.by_id[s].get('line')}, shape {shape(view.by_id[s].get('shape'))}"),
                          ("then", f"{view.name(log)} (inside the loss), line {line}")],
                fix=f"loss = nn.CrossEntropyLoss()(logits, target)  # pass the logits, not {what}(logits)",
                lesson="04_mlp_loss"))
    return out


_SAME_NUMBERS = {"ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "SqueezeBackward0",
                 "SqueezeBackward1", "SqueezeBackward2", "UnsqueezeBackward0", "TransposeBackward0",
                 "PermuteBackward0", "TBackward0", "CloneBackward0"}
"""Ops that move or copy numbers without changing them: a softmax reshaped for the loss is
still probabilities."""
_NLL = {"NllLossBackward0", "NllLoss2DBackward0"}


def nll_on_probabilities(view: DocView) -> list[dict[str, Any]]:
    """A softmax's probabilities fed to NLLLoss, which takes log-probabilities: the loss is then
    −mean(p[target]), not the cross-entropy (it lies in [−1, 0], where a negative log-likelihood
    is never negative), and its gradient stays small exactly where the model is confidently
    wrong. Reshapes between the two are followed; a ``log`` (the near miss, if unstable) or
    ``log_softmax`` between them is another op, so it stays silent."""
    out = []
    for s in view.named("SoftmaxBackward0"):
        sid = str(s["id"])
        frontier, seen = [sid], {sid}
        while frontier:
            n = frontier.pop()
            for c in view.consumers.get(n, []):
                if c in seen:
                    continue
                seen.add(c)
                name = view.name(c)
                if name in _SAME_NUMBERS:
                    frontier.append(c)
                elif name in _NLL and view.inputs.get(c, {}).get(0) == n:
                    out.append(_nll_hint(view, sid, c))
    return out


def _nll_hint(view: DocView, softmax: str, nll: str) -> dict[str, Any]:
    line = view.by_id[nll].get("line")
    return hint(
        "nll-on-probabilities", "warning", "softmax, then NLLLoss: it takes log-probabilities",
        "NLLLoss expects log-probabilities and its input is a softmax's probabilities, so the loss "
        "is −mean(p[target]) instead of the cross-entropy: it lies between −1 and 0, and its gradient "
        "stays small exactly where a prediction is confidently wrong (p near 0), so the worst "
        "mistakes teach the least.",
        line=line, nodes=[softmax, nll],
        evidence=[("softmax", f"line {view.by_id[softmax].get('line')}, shape "
                              f"{shape(view.by_id[softmax].get('shape'))}"),
                  ("then", f"{view.name(nll)}, line {line}")],
        fix="loss = F.nll_loss(F.log_softmax(logits, dim=1), target)  # or F.cross_entropy(logits, target)",
        lesson="04_mlp_loss")


def softmax_wrong_dim(view: DocView) -> list[dict[str, Any]]:
    """log_softmax over a dim other than the classes', fed straight to NLLLoss: NLLLoss picks
    ``logp[i, target[i]]`` along dim 1 (the classes), so a log_softmax along dim 0 normalises
    each class over the batch instead, and no row is a distribution. Only a direct edge is read
    (a transpose between them can make another dim the classes'), and only a batch of two or
    more rows and classes (one row: dim 0 is the only choice that differs, and says nothing)."""
    out = []
    for n in view.named("LogSoftmaxBackward0"):
        sid = str(n["id"])
        dim = (n.get("saved_args") or {}).get("dim")
        size = n.get("shape") or []
        if not isinstance(dim, int) or len(size) < 2 or min(size[0], size[1]) < 2:
            continue
        if (dim + len(size) if dim < 0 else dim) == 1:
            continue
        for c in view.consumers.get(sid, []):
            if view.name(c) in _NLL and view.inputs.get(c, {}).get(0) == sid:
                line = view.by_id[c].get("line")
                out.append(hint(
                    "softmax-wrong-dim", "warning",
                    f"log_softmax over dim {dim}, but NLLLoss reads the classes in dim 1",
                    f"NLLLoss takes log-probabilities with the classes in dim 1 (shape {shape(size)}: {size[1]} "
                    f"classes), and picks each row's target class. This log_softmax normalises along dim {dim} "
                    "instead, so each class is normalised over the batch and no row is a distribution: the "
                    "loss couples the examples of a batch and does not train a classifier.",
                    line=line, nodes=[sid, c],
                    evidence=[("log_softmax", f"line {n.get('line')}, dim={dim}, shape {shape(size)}"),
                              ("then", f"{view.name(c)}, line {line} (classes in dim 1)")],
                    fix="logp = F.log_softmax(logits, dim=1)  # the classes' dim",
                    lesson="04_mlp_loss"))
    return out


def sigmoid_bce(view: DocView) -> list[dict[str, Any]]:
    """A sigmoid's output fed to BCELoss (unstable: BCEWithLogitsLoss computes the same from
    the logits), or to BCEWithLogitsLoss, which applies a sigmoid of its own: twice squashed,
    every prediction lies between 0.5 and 0.73 and the loss cannot fall far (the
    ``double-softmax`` of binary targets)."""
    out = []
    for s, bce in _pairs(view, {"SigmoidBackward0"}, {"BinaryCrossEntropyBackward0",
                                                      "BinaryCrossEntropyWithLogitsBackward0"}):
        twice = view.name(bce) == "BinaryCrossEntropyWithLogitsBackward0"
        out.append(hint(
            "sigmoid-bce", "warning",
            "sigmoid applied twice: BCEWithLogitsLoss applies its own" if twice
            else "sigmoid, then BCELoss: use BCEWithLogitsLoss",
            "BCEWithLogitsLoss applies a sigmoid to its input, and its input is already a sigmoid's "
            "output: the probabilities are squashed twice, so every prediction lies between 0.5 and "
            "0.73, the loss cannot fall far and the gradients shrink." if twice else
            "BCELoss on a sigmoid's output takes the log of a probability that rounds to 0 or 1 "
            "for large logits (the loss then clamps at 100 and the gradient vanishes); "
            "BCEWithLogitsLoss computes the same loss from the logits, stably.",
            line=view.by_id[bce].get("line"), nodes=[s, bce],
            evidence=[("sigmoid", f"line {view.by_id[s].get('line')}"),
                      ("then", f"{view.name(bce)}, line {view.by_id[bce].get('line')}")],
            fix="loss = nn.BCEWithLogitsLoss()(logits, target)  # pass the logits, not sigmoid(logits)" if twice
            else "loss = nn.BCEWithLogitsLoss()(logits, target)  # no sigmoid before it",
            lesson="04_mlp_loss"))
    return out


_ONE_PLUS = re.compile(r"(?<![\w.])1(?:\.0*)?\s*\+|\+\s*1(?:\.0*)?(?![\w.])")
_MINUS_ONE = re.compile(r"-\s*1(?:\.0*)?(?![\w.])")


def hand_written_math(view: DocView) -> list[dict[str, Any]]:
    """``log(1 + x)``, ``exp(x) - 1`` and ``log(sum(exp(x)))`` written out by hand."""
    out = []
    adds = {"AddBackward0", "AddBackward1"}
    for add, log in _pairs(view, adds, {"LogBackward0"}):
        text = view.line_text(view.by_id[log].get("line"))
        if len(view.inputs.get(add, {})) == 1 and _ONE_PLUS.search(text):
            out.append(_stable(view, [add, log], "log(1 + x)", "torch.log1p(x)", text))
    for exp, sub in _pairs(view, {"ExpBackward0"}, {"SubBackward0", "SubBackward1", "AddBackward1"}):
        text = view.line_text(view.by_id[sub].get("line"))
        if len(view.inputs.get(sub, {})) == 1 and _MINUS_ONE.search(text):
            out.append(_stable(view, [exp, sub], "exp(x) - 1", "torch.expm1(x)", text))
    for exp, total in _pairs(view, {"ExpBackward0"}, {"SumBackward0", "SumBackward1"}):
        if _shifted_by_max(view, exp):
            continue  # ``m + log(sum(exp(x - m)))``: the stable form, written by hand
        for log in view.consumers.get(total, []):
            if view.name(log) == "LogBackward0":
                out.append(_stable(view, [exp, total, log], "log(sum(exp(x)))",
                                   "torch.logsumexp(x, dim=...)", view.line_text(view.by_id[log].get("line"))))
    return out


_MAXIMA = ("MaxBackward", "AmaxBackward")


def _shifted_by_max(view: DocView, exp: str) -> bool:
    """Whether ``exp``'s input is ``x - m`` with ``m`` a maximum (``x.max(dim).values``,
    ``amax``), kept in the graph or detached from it (a cut edge): logsumexp's own trick,
    which overflows no more than ``torch.logsumexp``."""
    for sub in view.sources.get(exp, []):
        if view.name(sub) not in ("SubBackward0", "SubBackward1"):
            continue
        sources = list(view.sources.get(sub, []))
        for src, targets in view.cut_consumers.items():  # a detached tensor: what it was cut from
            if sub in targets:
                cut = (view.by_id.get(src) or {}).get("cut") or {}
                sources.append(str(cut.get("source") or src))
        if any(view.name(src).startswith(_MAXIMA) for src in sources):
            return True
    return False


_WHY = {
    "log(1 + x)": "log(1 + x) loses precision where torch.log1p(x) does not: for small x, 1 + x "
                  "rounds away x's digits before the log sees them.",
    "exp(x) - 1": "exp(x) - 1 loses precision where torch.expm1(x) does not: for small x, exp(x) "
                  "is so close to 1 that the subtraction cancels most of its digits.",
    "log(sum(exp(x)))": "log(sum(exp(x))) overflows where torch.logsumexp does not: exp of a large x "
                        "is inf (of a very negative one, 0, and the log is -inf); logsumexp subtracts "
                        "the maximum first, so it stays finite and so does its gradient (a softmax).",
}
"""One sentence per pattern: each says what goes wrong for that formula, not another's."""


def _stable(view: DocView, nodes: list[str], written: str, stable: str, text: str) -> dict[str, Any]:
    line = view.by_id[nodes[-1]].get("line")
    return hint(
        "unstable-math", "info", f"{written} written by hand: {stable.split('(')[0]} is exact",
        _WHY[written],
        line=line, nodes=nodes,
        evidence=[("ops", " → ".join(view.name(n) for n in nodes)), ("line", text or "?")],
        fix=f"{stable}  # instead of {written}")


def mse_broadcast(view: DocView) -> list[dict[str, Any]]:
    """A regression loss whose input was broadcast against its target (torch's "target size"
    warning): every prediction is compared with every target."""
    losses = {"MseLossBackward0", "L1LossBackward0", "SmoothL1LossBackward0", "HuberLossBackward0"}
    out = []
    for expand, loss in _pairs(view, {"ExpandBackward0"}, losses):
        src = view.inputs.get(expand, {}).get(0)
        if src is None or view.by_id[expand].get("line") != view.by_id[loss].get("line"):
            continue
        before, after = view.by_id[src].get("shape"), view.by_id[expand].get("shape")
        target = next((s.get("shape") for s in view.by_id[loss].get("saved") or [] if s.get("name") == "target"), None)
        out.append(hint(
            "loss-broadcast", "error", f"the loss broadcast its input from {shape(before)} to {shape(after)}",
            f"The input of {view.name(loss)} has shape {shape(before)} and was broadcast against the "
            f"target to {shape(after)}: each prediction is compared with every target, not with its own.",
            line=view.by_id[loss].get("line"), nodes=[loss, expand, src],
            evidence=[("input shape", shape(before)), ("broadcast to", shape(after)),
                      ("target (as the loss saw it)", shape(target))],
            fix="loss = F.mse_loss(pred.squeeze(-1), target)  # make the shapes equal first"))
    return out


def graph_kept_alive(view: DocView) -> list[dict[str, Any]]:
    """``total += loss`` in a loop: a chain of additions on one line, one per iteration, that no
    backward walks, keeping every iteration's graph (and its saved tensors) alive."""
    walked = view.walked()
    out = []
    for n in view.named("AddBackward0", "AddBackward1"):
        if str(n["id"]) in walked:
            continue
        if any(view.name(c) == n["name"] and view.by_id[c].get("line") == n.get("line")
               for c in view.consumers.get(str(n["id"]), [])):
            continue  # not the end of a chain
        chain = [str(n["id"])]
        while True:
            prev = view.inputs.get(chain[-1], {}).get(0)
            if prev is None or view.name(prev) != n["name"] or view.by_id[prev].get("line") != n.get("line"):
                break
            chain.append(prev)
        if len(chain) < 3 or chain[-1] in walked:
            continue
        kept = len(view.upstream(chain[0]))
        out.append(hint(
            "graph-kept-alive", "warning", f"line {n.get('line')} keeps every iteration's graph alive",
            f"Line {n.get('line')} adds a tensor that has a graph {len(chain)} times in a row, and no "
            "backward walks the sum: it holds every iteration's graph and saved tensors until it is "
            "dropped. Add the number instead.",
            line=n.get("line"), nodes=chain[:1] + chain[-1:],
            evidence=[("additions chained", str(len(chain))), ("nodes kept alive", str(kept)),
                      ("line", view.line_text(n.get("line")) or "?")],
            fix="total += loss.item()  # a Python number: no graph kept",
            lesson="12_checkpoint_memory"))
    return out


_ZERO_GRAD = {"RoundBackward0": "round", "RoundBackward1": "round", "FloorBackward0": "floor",
              "CeilBackward0": "ceil", "SignBackward0": "sign", "TruncBackward0": "trunc",
              "FracBackward0": None}


def zero_gradient_ops(view: DocView) -> list[dict[str, Any]]:
    """An op whose gradient is zero everywhere (round, floor, sign, ...) on the path backward
    walked: everything before it learns nothing through it."""
    walked = view.walked()
    out = []
    for n in view.named(*_ZERO_GRAD):
        op = _ZERO_GRAD[str(n["name"])]
        if op is None or str(n["id"]) not in walked:
            continue
        out.append(hint(
            "zero-gradient-op", "warning", f"{op} has zero gradient: nothing before it learns",
            f"{op} is flat almost everywhere, so its backward sends zeros: the gradient reaching "
            f"what came before line {n.get('line')} through it is 0.",
            line=n.get("line"), nodes=[str(n["id"])],
            evidence=[("op", str(n.get("name"))), ("line", view.line_text(n.get("line")) or "?")],
            fix=f"y = x + (torch.{op}(x) - x).detach()  # straight-through: {op} forward, identity backward"))
    return out
