"""Hints about how the gradient flows: a chain that ends in an op with no gradient at all
(``argmax``, a comparison, an integer cast), and gradients that shrink or grow by orders of
magnitude from the last layer to the first."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint
from gradtrace.analysis.numbers import fmt, number, rounded

# NOTE [ops with no gradient]: argmax, a comparison or an integer cast returns a tensor with no
# grad_fn, so autograd records no node for them: the document shows only their consequence, a
# function node whose result nothing consumed, and a leaf upstream of it that ends without a
# gradient although a backward ran. The op itself is read from the source line.
_NONDIFF = re.compile(
    r"(?:\.|torch\.)(argmax|argmin|argsort|searchsorted|bucketize|long|int|short|byte|bool)\("
    r"|\.to\(\s*(?:dtype\s*=\s*)?torch\.(long|int\d*|bool|uint8)\b"
    r"|[\w)\]]\s*(>=|<=|==|!=|>|<)\s*[\w(.\-]")

_OP_WORD = {">=": "a comparison", "<=": "a comparison", "==": "a comparison", "!=": "a comparison",
            ">": "a comparison", "<": "a comparison"}


def _nondiff_op(text: str) -> str | None:
    """The non-differentiable op ``text`` applies, as a sentence names it, or None."""
    m = _NONDIFF.search(text.split("#", 1)[0])
    if m is None:
        return None
    op = next(g for g in m.groups() if g)
    return _OP_WORD.get(op, f".{op}()" if m[0].startswith(".") and not m[0].startswith(".to(") else op)


def nondiff_ops(view: DocView) -> list[dict[str, Any]]:
    """A result fed only to an op with no gradient (argmax, a comparison, ``.long()``), cutting
    off a leaf that ends with no ``.grad`` though a backward ran (NOTE [ops with no gradient]).

    NOTE [no false alarms]: an argmax for accuracy beside a loss on the same logits leaves the
    logits' node consumed by the loss (not a dead end), and its leaves get their gradient."""
    walked = view.walked()
    if not walked:
        return []
    out: list[dict[str, Any]] = []
    seen_lines: set[int] = set()
    for n in view.nodes:
        nid = str(n["id"])
        if (n.get("kind") != "function" or n.get("name") == "AccumulateGrad" or nid in walked
                or view.consumers.get(nid) or view.cut_consumers.get(nid)):
            continue
        line = n.get("line")
        op = _nondiff_op(view.line_text(line))  # the cheap test first: most dead ends have none
        if op is None or line is None or line in seen_lines:
            continue
        up = view.upstream(nid)
        starved = [t for t in view.leaf_nodes if t.get("grad") is None
                   and str(t["id"]) in up and view.accumulator(str(t["id"])) not in walked]
        if not starved:
            continue
        seen_lines.add(int(line))
        names = [view.tensor_label(t) for t in starved]
        out.append(hint(
            "non-differentiable-op", "warning", f"{op} on line {line} has no gradient: {names[0]} learns nothing",
            f"Line {line} feeds the result of {view.name(nid)} to {op}, which returns a tensor with no "
            f"gradient (integers or booleans), so autograd stops there: the backward never reaches "
            f"{', '.join(names[:3])}, whose .grad stays None.",
            line=line, nodes=[nid] + [str(t["id"]) for t in starved],
            evidence=[("line", view.line_text(line)), ("last node with a gradient", view.name(nid)),
                      (f"{names[0]}.grad", "None")],
            fix="# a differentiable stand-in: soft weights instead of an index or a mask\n"
                "w = torch.softmax(scores / tau, dim=-1)   # instead of scores.argmax(-1)\n"
                "m = torch.sigmoid((x - t) / tau)         # instead of (x > t).float()"))
    return out


# NOTE [vanishing and exploding thresholds]: each layer's gradient is measured as the RMS of its
# weight's .grad (norm / sqrt(numel)), so wide and narrow layers compare, and layers are put in
# forward order (the autograd sequence number of the op that first used the weight). Two
# conditions, both needed:
# - the first and last weight layers differ by 1e4 or more (four orders of magnitude: one
#   learning rate can then not serve both ends) over at least three weight layers, or by 1e2
#   or more over at least five (four falls in a row: PyTorch's "visualizing gradients"
#   tutorial shows a 567x fall over four sigmoid layers without batch norm; a three-layer
#   sigmoid MLP with the default init falls about 100x, the slope of two sigmoids, and
#   trains);
# - the change per layer (the geometric mean of the ratio) is 4x or more, and no single layer
#   reverses the trend by more than 10x. 4x is a sigmoid's best case (its slope is at most 1/4),
#   the textbook vanishing chain; torch's default Linear init with ReLU shrinks the gradient by
#   about 2-3x per layer (a 9-layer ReLU MLP: 3.7e3 overall, 2.8x per layer), which a deep
#   enough healthy MLP would push past the overall bound alone. The steadiness keeps a single odd layer (an
#   embedding, a zero-initialised head) from passing for a trend.
# tests/capture/test_hints.py: a small-init sigmoid MLP (25x per layer) and a SIREN with the
# default init (14x per layer, growing toward the input) fire; a default-init ReLU MLP, a SIREN
# with its own init and the 15 lessons stay silent.
_RATIO = 1e4
_DEEP_RATIO, _DEEP_LAYERS = 1e2, 5
_PER_LAYER = 4.0
_MIN_LAYERS = 3


def _rms(n: Mapping[str, Any]) -> float | None:
    shape = n.get("shape") or []
    numel = math.prod(shape) if shape else 1
    norm = number(((n.get("grad") or {}).get("stats") or {}).get("norm"))
    return None if norm is None or not math.isfinite(norm) or numel == 0 else norm / math.sqrt(numel)


def grad_flow(view: DocView) -> list[dict[str, Any]]:
    """Weight gradients that vanish (or explode) from the last layer back to the first
    (NOTE [vanishing and exploding thresholds]), in each model of the run on its own (the
    first part of a parameter's name: a GAN's ``G`` and ``D`` are two chains, not one)."""
    models: dict[str, list[Mapping[str, Any]]] = {}
    for n in view.leaf_nodes:
        models.setdefault(str(n.get("name") or "").split(".", 1)[0] if "." in str(n.get("name") or "")
                          else "", []).append(n)
    out: list[dict[str, Any]] = []
    for leaves in models.values():
        out += _chain_flow(view, leaves)
    return out


def _chain_flow(view: DocView, leaves: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    layers: list[tuple[int, Mapping[str, Any], float]] = []
    for n in leaves:
        if n.get("role") != "leaf" or len(n.get("shape") or []) < 2 or n.get("grad") is None:
            continue
        acc = view.accumulator(str(n["id"]))
        seqs = [int(s) for c in view.consumers.get(acc or "", [])
                if (s := view.by_id[c].get("seq")) is not None]
        size = _rms(n)
        if seqs and size is not None:
            layers.append((min(seqs), n, size))
    if len(layers) < _MIN_LAYERS:
        return []
    layers.sort(key=lambda x: x[0])  # forward order: the first layer first
    rms = [r for _, _, r in layers]
    first, last = rms[0], rms[-1]
    if first == 0 or last == 0:
        return []
    ratio = last / first
    bound = _DEEP_RATIO if len(rms) >= _DEEP_LAYERS else _RATIO
    if ratio >= bound:
        kind, steady = "vanish", all(rms[i + 1] >= rms[i] / 10 for i in range(len(rms) - 1))
    elif ratio <= 1 / bound:
        kind, steady = "explode", all(rms[i + 1] <= rms[i] * 10 for i in range(len(rms) - 1))
    else:
        return []
    per_layer = ratio ** (1 / (len(rms) - 1))
    if not steady or max(per_layer, 1 / per_layer) < _PER_LAYER:
        return []
    names = [view.tensor_label(n) for _, n, _ in layers]
    trail = " → ".join(f"{names[i]} {fmt(rounded(rms[i], 2))}" for i in range(len(rms)))
    vanish = kind == "vanish"
    return [hint(
        f"gradients-{'vanish' if vanish else 'explode'}", "warning",
        f"gradients {'vanish' if vanish else 'explode'} toward the first layer: "
        f"{names[0]} gets {fmt(rounded(ratio if vanish else 1 / ratio, 2))}x "
        f"{'less' if vanish else 'more'} than {names[-1]}",
        f"Backward {'shrinks' if vanish else 'grows'} the gradient by about "
        f"{fmt(rounded(per_layer if vanish else 1 / per_layer, 2))}x per layer over "
        f"{len(rms)} weight layers, so the first layers "
        f"{'barely learn' if vanish else 'take steps far too large'} at a learning rate that suits the last.",
        line=layers[0][1].get("line"), nodes=[str(layers[0][1]["id"]), str(layers[-1][1]["id"])],
        evidence=[("RMS of each weight's .grad, first layer to last", trail),
                  ("last / first", fmt(rounded(ratio, 2)))],
        fix=("# keep each layer's gain near 1: ReLU (or GELU) with Kaiming init, normalisation, "
             "residual connections\nnn.init.kaiming_normal_(layer.weight, nonlinearity='relu')"
             if vanish else
             "# scale the init down (nn.init.xavier_uniform_), normalise, or clip:\n"
             "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"))]


_TRAIN_ON = re.compile(r"\.train\(\s*(?:True|mode\s*=\s*True)?\s*\)")
"""``model.train()`` / ``.train(True)`` (not ``.train(False)``) on a line of the snippet."""


def _put_in_training_on_purpose(view: DocView, line: int) -> bool:
    """Whether the snippet puts a module in training mode on a line after its last backward
    call before ``line`` and before ``line``: Monte Carlo dropout (``model.train()`` after
    training, then sampling under ``no_grad``), not a loop whose ``model.train()`` at the top
    of each epoch is still in force when it evaluates."""
    code = view.doc.get("code")
    if not isinstance(code, str):
        return False
    backward = [int(p["line"]) for p in view.doc.get("passes") or [] if p.get("line") is not None]
    after = max((b for b in backward if b < line), default=0)
    lines = code.splitlines()
    return any(_TRAIN_ON.search(lines[k - 1].split("#", 1)[0]) for k in range(after + 1, min(line, len(lines) + 1)))


def train_mode_in_eval(view: DocView) -> list[dict[str, Any]]:
    """Dropout or batch norm called in training mode with gradients disabled: an evaluation
    block (``no_grad``) that forgot ``model.eval()`` (NOTE [training mode under no_grad] in
    gradtrace/capture/modules.py, which notes those calls' lines)."""
    by_line: dict[int, list[Mapping[str, Any]]] = {}
    for m in view.doc.get("modules") or []:
        for line in m.get("training_no_grad_lines") or []:
            by_line.setdefault(int(line), []).append(m)
    out: list[dict[str, Any]] = []
    for line, mods in sorted(by_line.items()):
        if _put_in_training_on_purpose(view, line):
            continue
        kinds = sorted({str(m["type"]) for m in mods})
        paths = ", ".join(f"{m['path']} ({m['type']})" for m in mods[:4]) + (
            f" and {len(mods) - 4} more" if len(mods) > 4 else "")
        root = str(mods[0]["path"]).split(".")[0]
        out.append(hint(
            "train-mode-in-eval", "warning", f"line {line} evaluates with {' and '.join(kinds)} in training mode",
            f"Line {line} runs with gradients off, as an evaluation does, but {paths} "
            f"{'is' if len(mods) == 1 else 'are'} still in training mode: dropout drops random "
            "units and batch norm normalises by this batch's statistics (and updates its running "
            "ones), so the numbers are not the model's. If that is meant (Monte Carlo dropout, "
            "re-estimating batch-norm statistics), ignore this.",
            line=line, nodes=[],
            evidence=[("line", view.line_text(line) or "?"), ("in training mode", paths)],
            fix=f"{root}.eval()   # before evaluating\nwith torch.no_grad():\n    ...\n"
                f"{root}.train()  # back to training afterwards"))
    return out + _functional_dropout_in_eval(view)


def _functional_dropout_in_eval(view: DocView) -> list[dict[str, Any]]:
    """``F.dropout`` without ``training=`` in the forward of a module put in eval mode (NOTE
    [functional dropout ignores eval()] in gradtrace/capture/dropouts.py): it still drops."""
    out: list[dict[str, Any]] = []
    for m in view.doc.get("modules") or []:
        for line in m.get("dropout_in_eval_lines") or []:
            text = view.line_text(int(line)) or "?"
            out.append(hint(
                "train-mode-in-eval", "warning", f"F.dropout at line {line} drops in eval mode",
                f"{m['path']} ({m['type']}) is in eval mode, but its forward calls F.dropout at line {line} "
                "without training=, and the function's default is training=True: .eval() does not reach "
                "it, so it still zeroes units at random and the evaluation's numbers change from call "
                "to call. nn.Dropout follows .eval(); F.dropout follows only its training argument.",
                line=int(line), nodes=[],
                evidence=[("line", text), ("in eval mode", f"{m['path']} ({m['type']})"),
                          ("F.dropout's default", "training=True")],
                fix="F.dropout(x, p, training=self.training)  # or an nn.Dropout(p) module"))
    return out


def eval_mode_in_training(view: DocView) -> list[dict[str, Any]]:
    """A model put in eval mode for an evaluation and trained on in it (NOTE [a module's modes]
    in gradtrace/capture/modules.py): a mode-sensitive module called in training mode with
    gradients on, then in eval mode for an evaluation (gradients off, or on in a call no backward
    walked), then in eval mode with gradients on in calls of its model that a backward pass went
    through, before any call in training mode again. A model in eval mode from the start (batch
    norm frozen for fine-tuning) or switched without an evaluation between (a freeze midway,
    whose first eval-mode call is trained through) stays silent."""
    found: dict[tuple[str, int], list[tuple[Mapping[str, Any], Mapping[str, Any], list[str]]]] = {}
    for m in view.doc.get("modules") or []:
        entries = list(m.get("modes") or [])
        trained = evaluated = None
        for k, entry in enumerate(entries):
            training, grad, root = bool(entry.get("training")), bool(entry.get("grad")), entry.get("root")
            if training and grad:
                trained, evaluated = entry, None
                continue
            if trained is None or training or not root:
                continue
            if not grad:
                evaluated = evaluated or entry
                continue
            later = next((e for e in entries[k + 1:] if e.get("training") and e.get("root")), None)
            end = int(later["root"]["call"]) if later is not None else None
            path, call = str(root["path"]), int(root["call"])
            if evaluated is None:  # gradients on: an evaluation only if no backward went through it
                if _walked_from(view, path, call, call + 1):
                    continue
                evaluated, call = entry, call + 1
            nodes = _walked_from(view, path, call, end)
            if nodes:
                found.setdefault((path, call), []).append((m, evaluated, nodes))
            break
    out: list[dict[str, Any]] = []
    for (root, _), hits in found.items():
        paths = ", ".join(f"{m['path']} ({m['type']})" for m, _, _ in hits[:4]) + (
            f" and {len(hits) - 4} more" if len(hits) > 4 else "")
        _, evaluated, nodes = hits[0]
        eval_line = evaluated.get("line")
        line = (view.by_id.get(nodes[0]) or {}).get("line")
        out.append(hint(
            "eval-mode-in-training", "warning",
            f"{root} trains in eval mode after the evaluation at line {eval_line}",
            f"{root} was put in eval mode for the evaluation at line {eval_line} and is trained on at line {line} "
            f"still in eval mode: {paths} {'runs' if len(hits) == 1 else 'run'} as in evaluation (dropout "
            "drops nothing, batch norm normalises by running statistics it no longer updates), and a backward "
            f"pass goes through it: {root}.train() is not called again after the evaluation.",
            line=line, nodes=nodes,
            evidence=[("evaluation", view.line_text(eval_line) or "?"),
                      ("training in eval mode", view.line_text(line) or "?"), ("in eval mode", paths)],
            fix=f"{root}.train()  # at the top of each epoch, before the training steps"))
    return out


def _walked_from(view: DocView, root: str, call: int, end: int | None = None) -> list[str]:
    """The nodes (the first 20, in creation order) made in a call of ``root`` numbered from
    ``call`` up to ``end`` (excluded; None: no end) that a backward pass walked."""
    found: list[str] = []
    for c, nodes in sorted(view.walked_by_root_call.get(root, {}).items()):
        if c >= call and (end is None or c < end):
            found += nodes[:20 - len(found)]
            if len(found) == 20:
                break
    return found
