"""Hints about the training loop: gradients summed across passes (and parameters no optimizer
holds), gradients cleared before any step used them, leaves a cut left without a gradient, the
``requires_grad`` workaround, and a second walk of a freed graph."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.gradoff import block_at, describe, grad_off_blocks
from gradtrace.analysis.hints.intent import backward_intent, step_line
from gradtrace.analysis.hints.write import hint
from gradtrace.analysis.numbers import fmt, number
from gradtrace.analysis.starved import hand_set_root, item_rebuild, reached, sample_cut, starved, tensor_rebuild


def _norm(tv: Any) -> str:
    stats = (tv or {}).get("stats") or {}
    return fmt(number(stats.get("norm")))


def accumulated(view: DocView) -> list[dict[str, Any]]:
    """Leaves whose ``.grad`` the same ``backward`` line (a loop) summed across new graphs with
    nothing clearing it, while the loop updates the parameters between the passes: one hint per
    line, naming every such leaf.

    NOTE [no false alarms]: backward calls on different lines that add up on purpose (two
    losses, a GAN's generator step reaching the discriminator's parameters), one graph walked
    twice with ``retain_graph``, accumulation over k steps with a reset every k (the leaf has
    resets), and micro-batches summed before one step (NOTE [accumulation by design] in
    ``analysis/hints/intent.py``) all stay silent."""
    passes = {int(p["index"]): p for p in view.doc.get("passes") or []}
    by_line: dict[int, list[tuple[Mapping[str, Any], str | None, list[int]]]] = {}
    for n in view.tensor_nodes:
        history = n.get("grad_history") or []
        if n.get("kind") != "tensor" or len(history) < 2 or n.get("grad_resets"):
            continue
        acc = view.accumulator(str(n["id"]))
        runs = [passes.get(int(ev.get("pass") or 0), {}) for _, ev in view.backward_events()
                if ev["node"] == acc]
        summed = [i for i in range(1, min(len(runs), len(history)))
                  if runs[i].get("line") is not None and runs[i].get("line") == runs[i - 1].get("line")
                  and runs[i].get("roots") != runs[i - 1].get("roots")]
        if summed:
            by_line.setdefault(int(runs[summed[0]]["line"]), []).append((n, acc, summed))
    out: list[dict[str, Any]] = []
    for line, leaves in by_line.items():
        if backward_intent(view.doc.get("code"), line) == "by-design":
            out += _outside_the_optimizer(view, line, leaves)
            continue
        names = [view.tensor_label(n) for n, _, _ in leaves]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        first, _, summed = leaves[0]
        history = first.get("grad_history") or []
        norms = " → ".join(_norm(history[i]) for i in range(min(len(history), 6)))
        grads = f"{shown}.grad" if len(names) == 1 else f"the .grad of {shown}"
        nodes: list[str] = []
        for n, acc, _ in leaves:
            nodes += [str(n["id"])] + ([acc] if acc else [])
        out.append(hint(
            "grad-accumulated", "warning", f"{grads} add{'s' if len(names) == 1 else ''} up across backward passes",
            f"The backward on line {line} ran {len(summed) + 1} times on new graphs and nothing "
            f"cleared {grads} in between, so each step also carries every earlier step's gradient.",
            line=line, nodes=nodes,
            evidence=[(f"‖{names[0]}.grad‖ after each pass", norms), ("passes summed", str(len(summed) + 1)),
                      *([("tensors", ", ".join(names))] if len(names) > 1 else []),
                      ("line", view.line_text(line) or "?")],
            fix=f"optimizer.zero_grad()  # or {names[0]}.grad = None, before each backward",
            lesson="09_accumulating_grads"))
    return out


def _outside_the_optimizer(view: DocView, line: int, leaves: list[tuple[Mapping[str, Any], str | None, list[int]]]
                           ) -> list[dict[str, Any]]:
    """A loop that clears ``.grad`` and steps (accumulation by design, NOTE [accumulation by
    design]) while some leaves its backward reaches are neither cleared nor moved: the
    optimizer does not hold them (``SGD(net[0].parameters())`` for a two-layer net). Their
    ``.grad`` adds up, and they never train. Said only where other leaves were cleared (so
    the loop's ``zero_grad`` ran) and these have no step at all."""
    if not any(t.get("grad_resets") for t in view.leaf_nodes):
        return []
    # a module's parameters only: a physics-informed net's collocation points get a .grad each
    # pass too, and no optimizer is meant to hold them
    modules = {str(m.get("path")) for m in view.doc.get("modules") or ()}
    idle = [(n, acc) for n, acc, _ in leaves if n.get("role") == "leaf" and not n.get("value_steps")
            and "." in str(n.get("name") or "") and str(n["name"]).rsplit(".", 1)[0] in modules]
    if not idle:
        return []
    names = [view.tensor_label(n) for n, _ in idle]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    history = idle[0][0].get("grad_history") or []
    norms = " → ".join(_norm(history[i]) for i in range(min(len(history), 6)))
    nodes: list[str] = []
    for n, acc in idle:
        nodes += [str(n["id"])] + ([acc] if acc else [])
    return [hint(
        "grad-accumulated", "warning", f"{shown}: no optimizer holds "
        + ("it, so its .grad adds up and it never trains" if len(names) == 1
           else "them, so their .grad adds up and they never train"),
        f"The backward on line {line} gives {shown} a gradient each time, but the optimizer's "
        "zero_grad() never clears it and its step() never moves it: it is not among the "
        "parameters the optimizer was given. Its .grad sums every pass, and its value stays "
        "as it started.",
        line=line, nodes=nodes,
        evidence=[(f"‖{names[0]}.grad‖ after each pass", norms), (f"{names[0]} updated", "never"),
                  ("other parameters", "cleared and updated each iteration"), ("line", view.line_text(line) or "?")],
        fix="# give the optimizer every parameter that should train\n"
            "opt = torch.optim.SGD(model.parameters(), lr=...)",
        lesson="09_accumulating_grads")]


def discarded(view: DocView) -> list[dict[str, Any]]:
    """Every parameter got a gradient in every iteration and a loop steps an optimizer, yet no
    parameter ever changed: each gradient was cleared before a step could use it (``zero_grad()``
    between ``backward()`` and ``step()``, or ``step()`` before ``backward()``).

    NOTE [no false alarms]: said only when nothing at all trained (a parameter whose gradient
    is exactly 0, a learning rate of 0 or a frozen group leave others moving), every such
    parameter's ``.grad`` was reset by the program, and some gradient was not 0."""
    trained = [n for n in view.leaf_nodes if len(n.get("grad_history") or ()) >= 2]
    if not trained or any(n.get("value_steps") for n in view.leaf_nodes):
        return []
    if not all(n.get("grad_resets") for n in trained):
        return []
    if not any(number((h.get("stats") or {}).get("norm")) for n in trained for h in n.get("grad_history") or () if h):
        return []
    passes = [p for p in view.doc.get("passes") or [] if p.get("line") is not None]
    if not passes:
        return []
    code = view.doc.get("code")
    backward = int(passes[-1]["line"])
    step = step_line(code, backward)
    if step is None:
        return []
    reset = next((int(r["line"]) for r in trained[0].get("grad_resets") or () if r.get("line") is not None), None)
    names = [view.tensor_label(n) for n in trained]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    if step < backward:
        why = (f"step() on line {step} runs before backward() on line {backward}, and the gradient is "
               f"cleared{f' on line {reset}' if reset is not None else ''} before the next step")
        fix = "opt.zero_grad()\nloss = ...\nloss.backward()\nopt.step()   # after backward"
    elif reset is not None and backward < reset < step:
        why = f"zero_grad() on line {reset} runs after backward() on line {backward} and before step() on line {step}"
        fix = "opt.zero_grad()   # before backward, not between backward and step\nloss.backward()\nopt.step()"
    else:  # the order is right: a learning rate of 0, say, which is no mistake of order
        return []
    nodes = [str(n["id"]) for n in trained]
    return [hint(
        "gradients-discarded", "error", f"no parameter ever changed: {why.split(',')[0]}",
        f"Every backward gave {shown} a gradient, and the loop steps its optimizer, but {why}: "
        "each step finds no gradient, so no parameter moves and the model never trains.",
        line=reset if reset is not None and backward < reset < step else step, nodes=nodes,
        evidence=[("backward", f"line {backward}: {view.line_text(backward) or '?'}"),
                  *([("gradient cleared", f"line {reset}: {view.line_text(reset) or '?'}")]
                    if reset is not None else []),
                  ("step", f"line {step}: {view.line_text(step) or '?'}"),
                  ("parameters updated", f"0 of {len(trained)}")],
        fix=fix, lesson="09_accumulating_grads")]


def cut_leaf(view: DocView) -> list[dict[str, Any]]:
    """A leaf that ends with no gradient although a backward ran through what was computed from
    it: a cut (``detach``, ``.data``) stands between (NOTE [no false alarms])."""
    walked = view.walked()
    out: list[dict[str, Any]] = []
    cuts = [n for n in view.cut_nodes if n["cut"].get("source")]
    # NOTE [leaves an optimizer holds] in capture/library.py: where optimizers stepped, a module's
    # parameter none of them holds is cut off by design (a target network, a frozen teacher); a
    # tensor of the program's own (an input made to require grad) is wanted whatever holds it
    stepped = any(n.get("optimized") for n in view.leaf_nodes)
    modules = {str(m.get("path")) for m in view.doc.get("modules") or ()} if stepped else set()
    for n in view.leaf_nodes:
        if n.get("role") != "leaf" or n.get("grad") is not None or not walked:
            continue
        if stepped and not n.get("optimized") and str(n.get("name") or "").rpartition(".")[0] in modules:
            continue
        acc = view.accumulator(str(n["id"]))
        if acc is None or acc in walked or reached(view, str(n["id"]), acc, walked):
            continue  # (reached: ``torch.autograd.grad`` returned its gradient, FGSM's input)
        for c in cuts:
            used = [t for t in view.consumers.get(str(c["id"]), []) + view.cut_consumers.get(str(c["id"]), [])
                    if t in walked]
            if not used or acc not in view.upstream(str(c["cut"]["source"])):
                continue
            how = {"detach": ".detach()", "data": ".data", "no_grad": "torch.no_grad()",
                   "inference_mode": "torch.inference_mode()"}.get(c["cut"]["kind"], c["cut"]["kind"])
            name, cut_name = view.tensor_label(n), view.tensor_label(c)
            block = block_at(grad_off_blocks(view.doc.get("code")), c["cut"].get("line"))
            where = [("block", describe(block))] if block is not None else []
            out.append(hint(
                "leaf-cut-off", "warning", f"{name} gets no gradient: {cut_name} was cut off by {how}",
                f"Backward ran through {cut_name}, but {cut_name} was made with {how} at line "
                f"{c['cut'].get('line')}, so no gradient flows back to {name}, whose .grad stays None.",
                line=c["cut"].get("line"), nodes=[str(n["id"]), str(c["id"]), str(c["cut"]["source"])],
                evidence=[("leaf", name),
                          ("cut", f"line {c['cut'].get('line')}: {view.line_text(c['cut'].get('line')) or how}"),
                          *where, (f"{name}.grad", "None")],
                fix=f"# keep the graph: use the tensor itself, not its {how} copy\n"
                    f"{cut_name} = ...  # without {how}",
                lesson="07_detach_and_no_grad"))
            break
        else:
            line = sample_cut(view, str(n["id"]))  # NOTE [a sample is a cut] in analysis/starved.py
            if line is not None:
                out.append(_sampled(view, n, line))
    return out + _never_in_graph(view)


def _sampled(view: DocView, n: Mapping[str, Any], line: int) -> dict[str, Any]:
    name = view.tensor_label(n)
    text = view.line_text(line) or ".sample()"
    return hint(
        "leaf-cut-off", "warning", f"{name} gets no gradient: .sample() at line {line} draws without gradient",
        f"Line {line} draws with .sample(), which runs under no_grad: the sample carries no path back to "
        f"the distribution's parameters, so the loss computed from it gives {name} no gradient and its "
        ".grad stays None. rsample() draws the same values by reparameterization (mean + std · noise), "
        "so the gradient flows through them.",
        line=line, nodes=[str(n["id"])],
        evidence=[("leaf", name), ("sample", f"line {line}: {text}"), (f"{name}.grad", "None")],
        fix=text.strip().replace(".sample(", ".rsample(") + "   # reparameterized: the gradient flows",
        lesson="07_detach_and_no_grad")


def _never_in_graph(view: DocView) -> list[dict[str, Any]]:
    """A module's parameter read only through ``.data`` (or ``detach()``) in its forward: it
    never reaches the graph, so it is no leaf of it; ``analysis/starved.py`` finds it from the
    module's ``unreached`` list and the line that reads it."""
    by_line: dict[int, list[str]] = {}
    for s in starved(view):
        if s["reason"] == "cut" and s["node"] is None and s["line"] is not None and ".data" in s["detail"]:
            by_line.setdefault(int(s["line"]), []).append(str(s["name"]))
    out = []
    for line, names in sorted(by_line.items()):
        shown = ", ".join(names)
        out.append(hint(
            "leaf-cut-off", "warning", f"{shown} gets no gradient: read through .data at line {line}",
            f"Line {line} reads {shown} through .data (or detach()), which has no history: the "
            f"parameter never enters the graph, so backward cannot reach it and its .grad stays None.",
            line=line, nodes=[],
            evidence=[("parameter", shown), ("cut", f"line {line}: {view.line_text(line) or '.data'}"),
                      (f"{names[0]}.grad", "None")],
            fix="# use the parameter itself in forward (self.w, not self.w.data)",
            lesson="07_detach_and_no_grad"))
    return out


def requires_grad_after_cut(view: DocView) -> list[dict[str, Any]]:
    """A backward from a root with no history (``loss.requires_grad = True`` on a cut result):
    it runs without error and reaches nothing. (Without the workaround it raises:
    ``backward_without_graph``.)"""
    if _NO_GRAPH_ERROR in str((view.doc.get("error") or {}).get("message", "")):
        return []
    out: list[dict[str, Any]] = []
    walked = view.walked()
    cuts = list(view.cut_nodes)
    rebuilt = item_rebuild(view)
    if rebuilt is not None:
        text = view.line_text(rebuilt) or "?"
        name = text.split("=", 1)[0].strip()
        return [hint(
            "requires-grad-after-cut", "error", f"{name} was rebuilt from a number: backward reaches nothing",
            f"Line {rebuilt} makes {name} a new tensor from a Python number (.item()), so it has no "
            "history: backward runs without error, and no parameter gets a gradient.",
            line=rebuilt, nodes=[],
            evidence=[("cut", f"line {rebuilt}: {text}"), ("nodes walked back to a parameter", "0")],
            fix=f"# keep the tensor itself: delete line {rebuilt}\n"
                f"# ({name}.item() is for printing and logging, never for the loss)",
            lesson="07_detach_and_no_grad")]
    made = tensor_rebuild(view)
    starved_leaves = {s["node"] for s in starved(view) if s["node"] is not None} if made is not None else set()
    if made is not None and starved_leaves & made[2]:
        line, names, leaves = made
        text = view.line_text(line) or "?"
        shown = ", ".join(names)
        lost = [view.tensor_label(view.by_id[n]) for n in sorted(starved_leaves & leaves)]
        return [hint(
            "requires-grad-after-cut", "error", f"torch.tensor() rebuilt {shown} as numbers: {lost[0]} gets no gradient"
            if len(lost) == 1 else f"torch.tensor() rebuilt {shown} as numbers: {len(lost)} leaves get no gradient",
            f"Line {line} makes a new tensor out of {shown}: torch.tensor() reads each one's value, not its "
            "graph, so the new tensor is a leaf with no history. Backward stops at it, and "
            f"{', '.join(lost[:4])}{' and more' if len(lost) > 4 else ''}, which {shown} came from, "
            f"{'gets' if len(lost) == 1 else 'get'} no gradient.",
            line=line, nodes=sorted(starved_leaves & leaves),
            evidence=[("rebuilt", f"line {line}: {text}"), ("with history", shown),
                      ("no gradient", ", ".join(lost[:6]))],
            fix=f"torch.stack([{shown}])   # keeps their graph (torch.cat for tensors of any shape)",
            lesson="07_detach_and_no_grad")]
    for p in view.doc.get("passes") or []:
        for root in p.get("roots") or []:
            n = view.by_id.get(root)
            if n is None or n.get("kind") != "tensor" or view.sources.get(root) or not cuts:
                continue
            if walked & {str(ev["node"]) for _, ev in view.backward_events() if ev.get("pass") == p["index"]}:
                continue
            name = view.tensor_label(n)
            cut = max(cuts, key=lambda c: c["cut"].get("line") or 0)
            where = f" at line {cut['cut']['line']}" if cut["cut"].get("line") is not None else ""
            out.append(hint(
                "requires-grad-after-cut", "error",
                f"{name} has no history: backward reached nothing",
                f"{name} was not computed by autograd (its graph was cut, {view.tensor_label(cut)} "
                f"by {cut['cut']['kind']}{where}), so setting requires_grad on it only makes "
                "backward run without error: no parameter gets a gradient.",
                line=p.get("line"), nodes=[root, str(cut["id"])],
                evidence=[("root", f"{name} (no grad_fn)"),
                          ("cut", f"{view.tensor_label(cut)}: {cut['cut']['kind']}{where}"),
                          ("nodes walked by this backward", "0")],
                fix="# remove the cut on the way to the loss, and the workaround:\n"
                    f"# {name}.requires_grad = True   <- delete",
                lesson="07_detach_and_no_grad"))
    if not out and not cuts:
        out += _no_history_root(view)
    return out


def _no_history_root(view: DocView) -> list[dict[str, Any]]:
    """A root with no history and no cut to blame: ops with no gradient made it (an argmax, a
    comparison, an integer cast), and ``requires_grad`` was set on it by hand (``hand_set_root``)."""
    found = hand_set_root(view)
    if found is None:
        return []
    line, root = found
    text = view.line_text(line) or "?"
    name = view.tensor_label(view.by_id[root])
    return [hint(
        "requires-grad-after-cut", "error", f"{name} has no history: backward reached nothing",
        f"{name} was computed without autograd: an op with no gradient (argmax, a comparison, a "
        f"cast to integers or bools, a number read out with .item()) stands on the way to it. "
        f"Line {line} sets requires_grad on it by hand, which only makes backward run without "
        "error: no parameter gets a gradient.",
        line=line, nodes=[root],
        evidence=[("root", f"{name} (no grad_fn)"), ("requires_grad set", f"line {line}: {text}"),
                  ("nodes walked by this backward", "0")],
        fix="# a differentiable loss instead of the workaround:\n"
            "w = torch.softmax(scores / tau, dim=-1)   # instead of scores.argmax(-1)\n"
            f"# and delete the requires_grad on {name} (line {line})",
        lesson="07_detach_and_no_grad")]


def graph_freed(view: DocView) -> list[dict[str, Any]]:
    """A second backward through a graph whose saved tensors the first one freed; where a
    tensor carried from one iteration into the next leads there (NOTE [a state carried across
    backward calls]), that tensor and its ``detach()``."""
    error = view.doc.get("error") or {}
    if "backward through the graph a second time" not in str(error.get("message", "")):
        return []
    node = error.get("node")
    carried = _carried(view, str(node)) if node else None
    if carried is not None:
        var, source, target = carried
        line = view.by_id[target].get("line")
        return [hint(
            "graph-freed", "error", f"{var} carries the last iteration's graph into this backward",
            f"{var} (made at line {view.by_id[source].get('line')}) is used again at line {line}, with its "
            "history: this iteration's graph reaches back through it into the previous iteration's, whose "
            f"saved tensors the previous backward freed, so this backward fails there. Keep {var}'s value "
            "and drop its history at each iteration: detach it (for an RNN's state, truncated "
            "backpropagation through time). retain_graph=True would make every backward walk every earlier "
            "iteration again.",
            line=error.get("line"), nodes=[str(node), source, target],
            evidence=[("error", str(error.get("message", "")).split(".")[0]),
                      ("carried", f"{var}: {view.name(source)} (line {view.by_id[source].get('line')}) → "
                                  f"{view.name(target)} (line {line})"),
                      ("freed by the previous backward", f"the saved tensors of {view.name(str(node))} "
                                                         f"(line {view.by_id[str(node)].get('line')})")],
            fix=f"{var} = {var}.detach()  # before it is used again: its value, not its graph",
            lesson="06_graph_freed")]
    return [hint(
        "graph-freed", "error", "backward through a graph that was already freed",
        "The first backward through this graph freed its saved tensors (the default, to save "
        "memory), so walking it again fails. Recompute the forward for each backward; keep the "
        "graph with retain_graph=True only when you really need to walk it twice, since it "
        "holds all its saved tensors until it is released.",
        line=error.get("line"), nodes=[str(node)] if node else [],
        evidence=[("error", str(error.get("message", "")).split(".")[0])],
        fix="loss = model(x).pow(2).mean()   # build the graph again, then\nloss.backward()\n"
            "# or, to walk one graph twice: loss.backward(retain_graph=True)",
        lesson="06_graph_freed")]


# NOTE [a state carried across backward calls]
#     An RNN's hidden state (or a running statistic, or a model's own output fed back in) kept
#     from one iteration to the next with its history makes each iteration's graph reach into
#     the last one's, which that iteration's backward freed. The freed node the error names
#     (capture/diagnose.py: one an earlier pass freed) was walked by that earlier pass; a
#     forward edge from a node made before that pass ran into a node made after it is where
#     the new graph reaches back: its source's variable is the carried tensor.
def _carried(view: DocView, freed: str) -> tuple[str, str, str] | None:
    """(the carried tensor's variable, its node, the new node that used it), or None."""
    passes = [s.get("freed_after_pass") for s in (view.by_id.get(freed) or {}).get("saved") or []
              if s.get("freed_after_pass") is not None]
    if not passes:
        return None
    earlier = min(passes)
    walked = [str(ev["node"]) for _, ev in view.backward_events() if ev.get("pass") == earlier]
    place = {str(n["id"]): i for i, n in enumerate(view.nodes)}
    if not walked or freed not in place:
        return None
    top = max(place.get(n, -1) for n in walked)
    for e in view.edges:
        s, t = str(e["source"]), str(e["target"])
        if e.get("cut") or place.get(s, top + 1) > top or place.get(t, -1) <= top:
            continue
        src = view.by_id.get(s) or {}
        if (src.get("kind") != "function" or src.get("name") == "AccumulateGrad" or not src.get("var")
                or (view.by_id.get(t) or {}).get("kind") != "function"):
            continue
        if freed == s or freed in view.upstream(s):
            return str(src["var"]), s, t
    return None


def threads_unrecorded(view: DocView) -> list[dict[str, Any]]:
    """Threads started by the run whose autograd work the recorder did not see (the document's
    ``threads_unrecorded``: NOTE [other threads' graphs] in capture/threads.py): the graph
    shown is not all the program built."""
    threads = list(view.doc.get("threads_unrecorded") or [])
    if not threads:
        return []
    names = [str(t.get("name")) for t in threads]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    nodes = sum(int(t.get("nodes") or 0) for t in threads)
    passes = sum(int(t.get("unrecorded_backward_calls") or 0) for t in threads)
    plural = "s" if len(names) > 1 else ""
    return [hint(
        "threads-unrecorded", "info", f"not recorded: the autograd work of thread{plural} {shown}",
        f"gradtrace records the graph built on the thread that runs the snippet. Thread{plural} "
        f"{shown} built {nodes} autograd node(s) and ran {passes} "
        "backward call(s) on graphs gradtrace never saw, so they are missing from the graph and "
        "the passes shown. Their results (gradients, printed values) are torch's as usual.",
        line=None, nodes=[],
        evidence=[("threads", shown), ("nodes made there", str(nodes)),
                  ("backward calls not recorded", str(passes))],
        fix="# to see such a graph, build it and call backward on the snippet's own thread")]


def stepped_twice(view: DocView) -> list[dict[str, Any]]:
    """Parameters two optimizers hold, each updating them with the same gradient (NOTE [one
    gradient, two optimizers] in gradtrace/capture/library.py, which records the two steps'
    lines): one hint per pair of lines, naming every such leaf."""
    by_lines: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for n in view.leaf_nodes:
        lines = n.get("stepped_twice")
        if isinstance(lines, list) and len(lines) == 2:
            by_lines.setdefault((int(lines[0]), int(lines[1])), []).append(n)
    out = []
    for (first, second), leaves in sorted(by_lines.items()):
        names = [view.tensor_label(n) for n in leaves]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        where = f"line {first}" if first == second else f"lines {first} and {second}"
        out.append(hint(
            "stepped-twice", "warning", f"{shown}: updated twice per backward, by two optimizers",
            f"Two optimizers hold {shown}, and both step() calls ({where}) update "
            f"{'it' if len(names) == 1 else 'them'} with the same gradient, from one backward: twice the "
            "step the program means (and two sets of momentum for one parameter). A learning rate of "
            "its own for a part of the model is a parameter group of one optimizer.",
            line=second, nodes=[str(n["id"]) for n in leaves],
            evidence=[("first step", view.line_text(first) or "?"), ("second step", view.line_text(second) or "?"),
                      ("parameters updated twice", str(len(leaves)))],
            fix="opt = torch.optim.Adam([{\"params\": body_params}, {\"params\": head_params, \"lr\": 1e-2}], "
                "lr=1e-3)  # one optimizer, one group each"))
    return out


_ADAM_FAMILY = frozenset({"Adam", "AdamW", "NAdam", "RAdam", "Adamax", "SparseAdam"})


def optimizer_recreated(view: DocView) -> list[dict[str, Any]]:
    """Parameters whose optimizer state started afresh at most of their steps: an optimizer made
    inside the training loop (NOTE [an optimizer made afresh] in capture/library.py). Silent on
    an optimizer made again once or now and then (a second stage, a new learning rate), and on
    plain SGD, which keeps no state (its steps are never counted)."""
    by_kind: dict[tuple[str, int | None], list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for n in view.leaf_nodes:
        r = n.get("state_restarts")
        if not isinstance(r, Mapping):
            continue
        restarts, steps = int(r.get("restarts") or 0), int(r.get("steps") or 0)
        if restarts >= 2 and 2 * restarts >= steps - 1:
            by_kind.setdefault((str(r.get("optimizer")), r.get("line")), []).append((n, r))
    out = []
    code = str(view.doc.get("code") or "")
    for (cls, step), rows in by_kind.items():
        names = [view.tensor_label(n) for n, _ in rows]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        steps, restarts = max(int(r["steps"]) for _, r in rows), max(int(r["restarts"]) for _, r in rows)
        made, loop = _made_in_loop(code, cls, step)
        where = f"{cls}(...) on line {made} runs inside the loop on line {loop}" if made and loop else \
            f"a new {cls} stepped them"
        if cls in _ADAM_FAMILY:
            effect = (f"Every update is then {cls}'s first, lr·g/(|g| + eps): about lr·sign(g) for every element "
                      "whatever the gradient's size, and the moments that adapt the step never build up")
        else:
            effect = f"What {cls} keeps between steps (momentum, running averages) starts from zero every time"
        out.append(hint(
            "optimizer-recreated", "warning", f"{cls} made afresh at each step: its state starts from zero",
            f"{where}, so {restarts + 1} of the {steps} steps that updated {shown} began with no state. {effect}. "
            "An optimizer is made once, before the loop, and keeps its state across iterations.",
            line=made or step, nodes=[str(n["id"]) for n, _ in rows],
            evidence=[("steps", str(steps)), ("steps from empty state", str(restarts + 1)),
                      *([("made at", f"line {made}: {view.line_text(made)}")] if made else []),
                      *([("step", f"line {step}: {view.line_text(step)}")] if step else [])],
            fix=f"opt = torch.optim.{cls}(model.parameters(), lr=...)   # once, before the loop\n"
                "for x, y in data:\n    opt.zero_grad()\n    loss = ...\n    loss.backward()\n    opt.step()"))
    return out


def _made_in_loop(code: str, cls: str, step: int | None) -> tuple[int | None, int | None]:
    """The line of a ``cls(...)`` call inside a loop that also holds the ``step`` line, and the
    loop's line; (None, None) when the code shows none."""
    if step is None:
        return None, None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None, None
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For | ast.While) or not loop.lineno <= step <= (loop.end_lineno or 0):
            continue
        for node in ast.walk(loop):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name == cls and node.lineno <= step:
                return node.lineno, loop.lineno
    return None, None


# NOTE [a backward with no graph]
#     ``loss.backward()`` on a tensor autograd recorded nothing for raises "element 0 of
#     tensors does not require grad and does not have a grad_fn", the error beginners meet
#     first, and the message does not say why. The document holds the root (a tensor node with
#     no sources) and the code: the root's last assignment before the backward, and the
#     assignments of the names it reads (one level: ``pred`` for ``loss = mse(pred, y)``, or a
#     function it calls), are looked at for the usual causes, in this order: a block with
#     gradients off around one of them (``with torch.no_grad():``, a decorated function:
#     analysis/gradoff.py), a recorded cut (``.detach()``, ``.data``), and an op with no
#     gradient written there (``argmax``, a comparison, an integer cast, ``.item()``,
#     ``torch.tensor(...)``). With none found, the hint says what the error means and no more.
_NO_GRADIENT = re.compile(r"\.\s*(?:argmax|argmin|round|floor|ceil|long|int|bool|item|numpy|tolist)\s*\(|"
                          r"\btorch\.(?:argmax|argmin|round|floor|ceil|tensor|as_tensor|from_numpy)\s*\(")
_NO_GRAPH_ERROR = "does not require grad and does not have a grad_fn"


def backward_without_graph(view: DocView) -> list[dict[str, Any]]:
    """The error of a backward from a tensor with no graph, with its cause (NOTE [a backward
    with no graph])."""
    error = view.doc.get("error") or {}
    if _NO_GRAPH_ERROR not in str(error.get("message", "")):
        return []
    failed = [p for p in view.doc.get("passes") or [] if not p.get("completed", True)]
    roots = [view.by_id[r] for p in failed[-1:] for r in p.get("roots") or [] if r in view.by_id]
    root = next((n for n in roots if n.get("kind") == "tensor" and not view.sources.get(str(n["id"]))), None)
    if root is None:
        return []
    name = view.tensor_label(root)
    line = error.get("line") or (failed[-1].get("line") if failed else None)
    code = str(view.doc.get("code") or "")
    lines = _feeding_lines(code, str(root.get("name") or ""), int(line) if line is not None else None)
    short, cause, fix, where = _no_graph_cause(view, code, lines)
    return [hint(
        "backward-without-graph", "error", f"{name} has no grad_fn: {short}",
        f"backward() walks the graph autograd recorded while {name} was computed, and there is none: "
        f"{cause}. torch says \"element 0 of tensors does not require grad and does not have a grad_fn\".",
        line=where or line, nodes=[str(root["id"])],
        evidence=[("root", f"{name} (no grad_fn)"), *(("line", f"{ln}: {view.line_text(ln)}") for ln in lines[:3])],
        fix=fix, lesson="07_detach_and_no_grad")]


def _feeding_lines(code: str, name: str, before: int | None) -> list[int]:
    """The line that last assigned ``name`` before line ``before``, then the lines that assigned
    (or defined) the names its value reads, latest first; empty when the code cannot be read."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    assigned: dict[str, list[tuple[int, ast.AST]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        assigned.setdefault(n.id, []).append((node.lineno, node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assigned.setdefault(node.name, []).append((node.body[0].lineno if node.body else node.lineno, node))

    def last(n: str, limit: int | None) -> tuple[int, ast.AST] | None:
        found = [(ln, nd) for ln, nd in assigned.get(n, []) if limit is None or ln <= limit]
        return max(found, key=lambda f: f[0]) if found else None

    hit = last(name, before)
    if hit is None:
        return []
    out = [hit[0]]
    value = getattr(hit[1], "value", None)
    for n in ast.walk(value) if value is not None else ():
        if isinstance(n, ast.Name) and n.id != name:
            src = last(n.id, hit[0])
            if src is not None and src[0] not in out:
                out.append(src[0])
    return out


def _no_graph_cause(view: DocView, code: str, lines: list[int]) -> tuple[str, str, str, int | None]:
    """(what left the root without a graph, in a few words and in full, the fix, the line)."""
    blocks = grad_off_blocks(code)
    for ln in lines:
        block = block_at(blocks, ln)
        if block is not None:
            title = describe(block).split(" at line")[0]
            return (f"line {ln} ran under {title}",
                    f"line {ln} ran with gradients off ({describe(block)}), which records no graph",
                    "# compute the loss's inputs with gradients on (gradients off is for evaluation only):\n"
                    f"{view.line_text(ln).strip()}  # outside the block", ln)
    for n in view.cut_nodes:
        cut = n.get("cut") or {}
        if cut.get("line") in lines:
            kind = cut.get("kind")
            return (f"{kind} at line {cut['line']} cut it off",
                    f"line {cut['line']} cut it off the graph ({kind}): what comes out has no history",
                    f"# drop the {kind} on the way to the loss (line {cut['line']})", int(cut["line"]))
    for ln in lines:
        text = view.line_text(ln).split("#", 1)[0]
        m = _NO_GRADIENT.search(text)
        if m:
            op = m[0].strip(" .(")
            return (f"{op} at line {ln} has no gradient",
                    f"line {ln} computes it with {op}, which has no gradient: autograd records nothing "
                    "from there on",
                    "# a differentiable loss on the model's outputs, e.g. F.cross_entropy(logits, target)\n"
                    f"# instead of {op} (keep {op} for metrics)", ln)
    return ("autograd recorded nothing that made it", "no op that autograd records made it",
            "# compute the loss from the model's outputs, with gradients on; torch.tensor(...) and .item() "
            "make new tensors with no history", None)
