"""Hints for the errors beginners meet first, each said in the snippet's own terms with its fix.

NOTE [an error said with its cause]
    torch's message names the rule a program broke, not where the program broke it: "a leaf
    Variable that requires grad is being used in an in-place operation" does not say that the
    line is a by-hand SGD update, nor "mat1 and mat2 must have the same dtype" that the input
    came from numpy. The document holds the error (its message, line, op and module:
    ``RunError``), the failed backward pass with its root, and the code: each check below
    matches one message of torch's, reads the names on the error's line (``ast``), and says
    the cause and the fix with them. It never fires without that error, so a program that runs
    is never accused; ``tests/capture/test_error_hints.py`` runs each mistake, checks torch's
    own message, and runs the fix the hint gives, which torch accepts. The "does not require
    grad" error is ``backward-without-graph`` (``training.py``), and in-place changes of saved
    tensors and a graph walked twice are ``RunError.detail`` (``capture/diagnose.py``).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint, shape


def _error(view: DocView) -> Mapping[str, Any]:
    return view.doc.get("error") or {}


def _statement(code: str, line: int | None) -> ast.stmt | None:
    """The innermost simple statement on ``line`` of ``code``, or None."""
    if line is None:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    found: ast.stmt | None = None
    for node in ast.walk(tree):
        if (isinstance(node, ast.stmt) and not isinstance(node, ast.For | ast.While | ast.If | ast.With | ast.Try
                                                           | ast.FunctionDef | ast.ClassDef)
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            found = node
    return found


def _base_name(node: ast.AST) -> str | None:
    """``w`` of ``w``, ``w[0]``, ``w.data``; ``model.w`` of ``model.w``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name | ast.Attribute):
        return ast.unparse(node)
    return None


def _calls(stmt: ast.stmt) -> list[ast.Call]:
    return sorted((n for n in ast.walk(stmt) if isinstance(n, ast.Call)), key=lambda c: (c.lineno, c.col_offset))


def _assigned_at(code: str, name: str, before: int) -> int | None:
    """The last line before ``before`` that assigns ``name`` (a plain name), or None."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign) and n.lineno < before
             and any(name in {ast.unparse(e) for e in (t.elts if isinstance(t, ast.Tuple) else [t])}
                     for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    return max(lines, default=None)


_LEAF_IN_PLACE = re.compile(r"a (view of a )?leaf Variable that requires grad is being used in an in-place operation")


def leaf_changed_in_place(view: DocView) -> list[dict[str, Any]]:
    """torch's "a leaf Variable that requires grad is being used in an in-place operation": a
    parameter updated by hand (``w -= lr * w.grad``) or initialized in place outside
    ``torch.no_grad()``."""
    error = _error(view)
    found = _LEAF_IN_PLACE.search(str(error.get("message", "")))
    line = error.get("line")
    if found is None or line is None:
        return []
    code = str(view.doc.get("code") or "")
    stmt = _statement(code, int(line))
    name: str | None = None
    if isinstance(stmt, ast.AugAssign):
        name = _base_name(stmt.target)
    elif isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript):
        name = _base_name(stmt.targets[0])
    elif stmt is not None:
        method = next((c.func for c in _calls(stmt) if isinstance(c.func, ast.Attribute)
                       and c.func.attr.endswith("_") and not c.func.attr.startswith("_")), None)
        name = _base_name(method.value) if method is not None else None
    text = view.line_text(int(line)).strip()
    shown = name or "a leaf tensor"
    what = "a view of it" if found.group(1) else "it"
    update = ".grad" in text
    why = ("This line is an update by hand of a parameter from its gradient: it is no part of the graph, and "
           "belongs under torch.no_grad(), as an optimizer's step() runs it."
           if update else
           "Where the change is no part of the model (an initialization, a clamp of the weights), make it under "
           "torch.no_grad(); where it is, compute a new tensor instead of changing the leaf.")
    fix = f"with torch.no_grad():\n    {text}"
    if update and name:
        fix += f"\n{name}.grad.zero_()   # or {name}.grad = None, before the next backward"
    return [hint(
        "leaf-changed-in-place", "error", f"{shown} changed in place while it requires grad",
        f"{shown} is a leaf that requires grad (requires_grad=True), and line {line} changes {what} in place"
        f"{_op(error)} where autograd records. autograd refuses: the graphs that use {shown} "
        f"read its value, and a leaf has no history to record the change in. {why}",
        line=int(line), nodes=[str(error["node"])] if str(error.get("node")) in view.by_id else [],
        evidence=[("line", f"{line}: {text}"), *([("op", str(error["op"]))] if error.get("op") else [])],
        fix=fix)]


def _op(error: Mapping[str, Any]) -> str:
    return f" (`{error['op']}`)" if error.get("op") else ""


_NOT_SCALAR = "grad can be implicitly created only for scalar outputs"


def backward_non_scalar(view: DocView) -> list[dict[str, Any]]:
    """torch's "grad can be implicitly created only for scalar outputs": ``backward()`` without
    a gradient from a tensor of many elements (a loss made with ``reduction='none'``, an
    output never reduced)."""
    error = _error(view)
    if _NOT_SCALAR not in str(error.get("message", "")):
        return []
    failed = [p for p in view.doc.get("passes") or [] if not p.get("completed", True)]
    roots = [view.by_id[r] for p in failed[-1:] for r in p.get("roots") or [] if r in view.by_id]
    root = next((n for n in roots if n.get("kind") == "tensor"), None)
    line = error.get("line") or (failed[-1].get("line") if failed else None)
    stmt = _statement(str(view.doc.get("code") or ""), int(line) if line is not None else None)
    method = next((c.func for c in (_calls(stmt) if stmt is not None else [])
                   if isinstance(c.func, ast.Attribute) and c.func.attr == "backward"), None)
    name = (str(root["name"]) if root is not None and root.get("name") else
            ast.unparse(method.value) if isinstance(method, ast.Attribute) else "the tensor")
    dims = ((root or {}).get("value") or {}).get("shape")
    has = f" has shape {shape(dims)}" if isinstance(dims, list) else " has more than one element"
    per_sample = "reduction='none'" in str(view.doc.get("code") or "").replace('"', "'")
    why = (" A loss made with reduction='none' gives one value per sample; the loss to train on is their mean."
           if per_sample else "")
    return [hint(
        "backward-non-scalar", "error", f"backward() from {name}, which is not a single number",
        f"{name}.backward() with no argument starts the chain rule from d{name}/d{name} = 1, which is defined "
        f"for a single number only, and {name}{has}.{why} Reduce it to the number to minimize ({name}.mean() "
        f"or {name}.sum()), or give backward the vector to weigh each element's gradient by: "
        f"{name}.backward(torch.ones_like({name})) sums them.",
        line=int(line) if line is not None else None, nodes=[str(root["id"])] if root is not None else [],
        evidence=[("root", f"{name}{'' if not isinstance(dims, list) else ' ' + shape(dims)}"),
                  *([("line", f"{line}: {view.line_text(int(line)).strip()}")] if line is not None else [])],
        fix=f"{name}.mean().backward()   # or {name}.sum().backward()"
            f"\n# or keep each element's gradient weighted by 1: {name}.backward(torch.ones_like({name}))")]


_FLOAT64_INPUT = re.compile(r"but got Double and Float|Input type \(double\) and (?:bias|weight) type \(float\)"
                            r"|got: double != float|input dtype \(torch\.float64\) does not match weight dtype "
                            r"\(torch\.float32\)")
_FROM_NUMPY = re.compile(r"\bfrom_numpy\s*\(|\bnp\.|\bnumpy\s*\(|\.values\b|\bpd\.")


def float64_input(view: DocView) -> list[dict[str, Any]]:
    """A float64 tensor (numpy's default float) given to float32 weights: torch's "mat1 and mat2
    must have the same dtype, but got Double and Float" and its kin for convolutions, RNNs and
    matmul."""
    error = _error(view)
    line = error.get("line")
    if line is None or not _FLOAT64_INPUT.search(str(error.get("message", ""))):
        return []
    code = str(view.doc.get("code") or "")
    name = _module_input(code, int(line))
    made = _assigned_at(code, name, int(line)) if name and "." not in name else None
    numpy = made is not None and _from_numpy(code, view, made)
    taker = _raiser(error)
    shown = name or "its input"
    source = (f" It was made from a numpy array on line {made}: numpy's floats are float64, and "
              "torch.from_numpy and torch.tensor keep the dtype they are given." if numpy else "")
    return [hint(
        "float64-input", "error", f"{shown} is float64; the weights are float32",
        f"{taker} holds float32 weights (torch's default), and {shown} is float64. torch does not mix the two in one "
        f"matmul or convolution, and does not convert for you.{source} float32 is what models train in: convert "
        "the data once, where it is made.",
        line=int(line), nodes=[],
        evidence=[("line", f"{line}: {view.line_text(int(line)).strip()}"),
                  *([("made at", f"line {made}: {view.line_text(made).strip()}")] if made else [])],
        fix=(f"{shown} = {shown}.float()   # float32, as the weights" if name else
             "x = torch.from_numpy(a).float()   # or torch.tensor(a, dtype=torch.float32)"))]


def _from_numpy(code: str, view: DocView, made: int) -> bool:
    """Whether line ``made`` makes its tensor from numpy: there, or in the assignment of a name
    it reads (``batch = torch.tensor(images)`` after ``images = np.random.rand(...)``)."""
    text = view.line_text(made)
    if _FROM_NUMPY.search(text):
        return True
    stmt = _statement(code, made)
    value = getattr(stmt, "value", None)
    names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} if value is not None else set()
    return any((at := _assigned_at(code, n, made)) is not None and bool(_FROM_NUMPY.search(view.line_text(at)))
               for n in sorted(names))


def _loss_args(code: str, line: int) -> tuple[str | None, str | None]:
    """The input and target expressions of the loss call on ``line`` (its first call with two
    arguments or more, the second a name, attribute or subscript): (None, None) when none."""
    stmt = _statement(code, line)
    call = next((c for c in (_calls(stmt) if stmt is not None else [])
                 if len(c.args) >= 2 and isinstance(c.args[1], ast.Name | ast.Attribute | ast.Subscript)), None)
    return (ast.unparse(call.args[0]), ast.unparse(call.args[1])) if call is not None else (None, None)


def _raiser(error: Mapping[str, Any]) -> str:
    """The module (``model.2 (Linear)``) or op (`` `cross_entropy` ``) that raised ``error``."""
    return (f"{error['module']} ({error['module_type']})" if error.get("module") and error.get("module_type")
            else f"`{error['op']}`" if error.get("op") else "the op")


_CLASS_TARGET = re.compile(r"expected target dtype to be Long or Byte, but got (\w+)")
_BCE_TARGET = re.compile(r"result type Float can't be cast to the desired output type (Long|Int|Bool)"
                         r"|Found dtype (Long|Int|Bool) but expected Float")
_BCE_OPS = {"binary_cross_entropy", "binary_cross_entropy_with_logits"}
_PROBS_TARGET = re.compile(r"Expected floating point type for target with class probabilities, got (\w+)")


def target_dtype(view: DocView) -> list[dict[str, Any]]:
    """A loss given targets of the wrong dtype: float class labels to cross-entropy or NLL
    (which take int64 class indices), integer labels to BCE (which takes float probabilities)."""
    error = _error(view)
    line = error.get("line")
    message = str(error.get("message", ""))
    cls, bce, probs = _CLASS_TARGET.search(message), _BCE_TARGET.search(message), _PROBS_TARGET.search(message)
    if line is None or not (cls or probs or (bce and str(error.get("op")) in _BCE_OPS)):
        return []
    _, target = _loss_args(str(view.doc.get("code") or ""), int(line))
    shown = target or "the target"
    loss = _raiser(error)
    if probs:
        got = probs.group(1)
        title = f"{shown} is {got} with one column per class; {loss} takes class indices or float probabilities"
        message = (f"{shown} has a column per class, as F.one_hot makes it, so {loss} reads it as class "
                   f"probabilities, which must be float; it is {got}. The usual target is the class index of each "
                   "sample: one number per sample, int64.")
        fix = f"{shown} = {shown}.argmax(1)   # class indices; or {shown}.float() to keep it as probabilities"
    elif cls:
        got = cls.group(1)
        title = f"{shown} holds class labels as {got}; {loss} takes int64 class indices"
        message = (f"{loss} reads {shown} as class indices, one per sample, which must be int64 (torch.long); "
                   f"{shown} is {got}. Labels read from a file or made with torch.tensor from floats come out "
                   "float. (A float target of the logits' own shape is read as class probabilities instead.)")
        fix = f"{shown} = {shown}.long()"
    else:
        got = bce.group(1) or bce.group(2)  # type: ignore[union-attr]
        title = f"{shown} is {got}; {loss} takes float targets"
        message = (f"{loss} compares each prediction with a target probability in [0, 1], a float like the "
                   f"prediction; {shown} is {got} (labels made with torch.randint, or read as integers).")
        fix = f"{shown} = {shown}.float()"
    return [hint(
        "target-dtype", "error", title, message, line=int(line), nodes=[],
        evidence=[("line", f"{line}: {view.line_text(int(line)).strip()}"), ("target dtype", got)],
        fix=fix)]


_MULTI_TARGET = "0D or 1D target tensor expected, multi-target not supported"
_CLASSES_LAST = re.compile(r"Expected target size \[[\d, ]+\], got \[[\d, ]+\]")
_BATCH = re.compile(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)")
_SIZES = re.compile(r"(?:T|Using a t)arget size \(torch\.Size\(\[[\d, ]*\]\)\) (?:must be the same as|that is "
                    r"different to the) input size")


def _ints(s: Any) -> list[int] | None:
    """A shape as the document writes it (a list of whole numbers), or None."""
    return [int(d) for d in s] if isinstance(s, list) and all(type(d) is int for d in s) else None


def _dims(error: Mapping[str, Any]) -> tuple[list[int], list[int]] | None:
    """The shapes of the raising call's first two tensor arguments (input, target), or None."""
    shapes = error.get("shapes")
    if not isinstance(shapes, list) or len(shapes) < 2:
        return None
    got, want = _ints(shapes[0]), _ints(shapes[1])
    return None if got is None or want is None else (got, want)


def target_shape(view: DocView) -> list[dict[str, Any]]:
    """A loss given a target whose shape does not match its input's as the loss reads them:
    class labels of shape [N, 1], a sequence's classes last ([N, T, C]), logits flattened and
    targets not, BCE's [N, 1] outputs against [N] targets."""
    error = _error(view)
    line, message = error.get("line"), str(error.get("message", ""))
    dims = _dims(error)
    if line is None or dims is None:
        return []
    got, want = dims
    code = str(view.doc.get("code") or "")
    inp, target = _loss_args(code, int(line))
    x, t = inp or "the input", target or "the target"
    loss = _raiser(error)
    batch = _BATCH.search(message)
    if _MULTI_TARGET in message and len(want) == 2 and want[1] == 1:
        title = f"{t} has shape {shape(want)}; {loss} takes one class index per sample, shape [{want[0]}]"
        why = (f"{loss} takes the class index of each sample as a tensor of shape [N]; {t} has a second dim of "
               "size 1 (labels kept as a column, as a DataFrame or a dataset of [label] rows gives them).")
        fix = f"{t} = {t}.squeeze(1)   # shape [{want[0]}]"
    elif _CLASSES_LAST.search(message) and len(got) >= 3 and got[:-1] == want:
        title = f"{x} has its {got[-1]} classes last; {loss} takes them on dim 1"
        why = (f"{loss} reads the classes on dim 1 ([N, C, ...]); {x} has shape {shape(got)}, its {got[-1]} classes "
               f"last, as a sequence model writes them, so its dim 1 ({got[1]}) was taken for the classes.")
        fix = (f"loss = F.cross_entropy({x}.transpose(1, 2), {t})   # classes on dim 1\n"
               f"# or flatten both: F.cross_entropy({x}.reshape(-1, {got[-1]}), {t}.reshape(-1))")
    elif batch and len(got) == 2 and math.prod(want) == got[0] and len(want) >= 2:
        title = f"{x} was flattened to {got[0]} rows and {t} was not"
        why = (f"{loss} pairs each row of {x} ({shape(got)}: one row per position) with one element of {t}; {t} "
               f"still has shape {shape(want)}, so it gives {want[0]} targets for {got[0]} rows.")
        fix = f"loss = F.cross_entropy({x}, {t}.reshape(-1))   # {got[0]} targets, one per row"
    elif _SIZES.search(message) and (got == [*want, 1] or want == [*got, 1]):
        title = f"{x} has shape {shape(got)} and {t} {shape(want)}; {loss} pairs them element by element"
        why = (f"{loss} compares each output with its own target, so the two shapes must be equal; "
               + (f"{x} has one column ({shape(got)}, as nn.Linear(..., 1) gives) and {t} none."
                  if got == [*want, 1] else f"{t} has one column more than {x}."))
        fix = (f"{t} = {t}.unsqueeze(1)   # {shape(got)}, as the output; or pass {x}.squeeze(1)"
               if got == [*want, 1] else f"{t} = {t}.squeeze(-1)   # {shape(got)}, as the output")
    else:
        return []
    return [hint("target-shape", "error", title, why, line=int(line), nodes=[],
                 evidence=[("line", f"{line}: {view.line_text(int(line)).strip()}"), ("input shape", shape(got)),
                           ("target shape", shape(want))], fix=fix)]


_OUT_OF_BOUNDS = re.compile(r"Target (-?\d+) is out of bounds")


def target_out_of_range(view: DocView) -> list[dict[str, Any]]:
    """torch's "Target 3 is out of bounds": a class index outside [0, C) for a model with C
    outputs (labels counted from 1, or one output short)."""
    error = _error(view)
    line = error.get("line")
    found = _OUT_OF_BOUNDS.search(str(error.get("message", "")))
    dims = _dims(error)
    if line is None or found is None or dims is None or len(dims[0]) < 2:
        return []
    value, classes = int(found.group(1)), dims[0][1]
    _, target = _loss_args(str(view.doc.get("code") or ""), int(line))
    t = target or "the target"
    one_based = value == classes
    why = (f"{t} holds class {value}, and the model's output has {classes} scores per sample, for the classes 0 to "
           f"{classes - 1}: class indices count from 0. "
           + ("Labels counted from 1 (1 to C) are one too high; a dataset with more classes needs an output "
              "layer as wide as its classes." if one_based else "No score stands for it."))
    fix = (f"{t} = {t} - 1   # labels 1..{classes} to 0..{classes - 1}\n"
           f"# or, with {classes + 1} classes: nn.Linear(..., {classes + 1}) as the last layer" if one_based else
           "# the last layer needs one output per class: nn.Linear(..., number_of_classes)")
    return [hint("target-out-of-range", "error", f"{t} holds class {value}; the model scores {classes} classes "
                 f"(0 to {classes - 1})", why, line=int(line), nodes=[],
                 evidence=[("line", f"{line}: {view.line_text(int(line)).strip()}"),
                           ("scores per sample", str(classes)), ("class in the target", str(value))], fix=fix)]


_CHANNELS = re.compile(r"weight of size \[(\d+), (\d+), [\d, ]+\], expected input\[[\d, ]+\] to have \d+ channels, "
                       r"but got (\d+) channels instead")
_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
_ONE_PER_CHANNEL = "Expected more than 1 value per channel when training"
_UNBATCHED = re.compile(r"Expected (\d)D \(unbatched\) or (\d)D \(batched\) input to (conv\dd)")
_RNN_SIZE = re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (\d+), got (\d+)")


def _module_input(code: str, line: int) -> str | None:
    """The expression the error's module (or op) was given on ``line``: the first argument of
    the first call there whose first argument is a name or attribute."""
    stmt = _statement(code, line)
    return next((ast.unparse(c.args[0]) for c in (_calls(stmt) if stmt is not None else [])
                 if c.args and isinstance(c.args[0], ast.Name | ast.Attribute)), None)


def input_shape(view: DocView) -> list[dict[str, Any]]:
    """A layer given an input of the wrong layout, said with the layout it takes: images with
    their channels last, a convolution's output into ``nn.Linear`` unflattened, a Linear's
    ``in_features`` that is not what reaches it, batch norm on a batch of one in training mode,
    an image without its channel and batch dims, a sequence with its features and time swapped."""
    error = _error(view)
    line, message = error.get("line"), str(error.get("message", ""))
    shapes = error.get("shapes")
    got = _ints(shapes[0]) if isinstance(shapes, list) and shapes else None
    if line is None or got is None:
        return []
    code = str(view.doc.get("code") or "")
    name = _module_input(code, int(line))
    x = name or "the input"
    layer = _raiser(error)
    channels, matmul, unbatched, rnn = (_CHANNELS.search(message), _MATMUL.search(message),
                                        _UNBATCHED.search(message), _RNN_SIZE.search(message))
    if channels and len(got) == 4 and got[3] == int(channels.group(2)):
        want = int(channels.group(2))
        title = f"{x} has its channels last {shape(got)}; {layer} takes [N, C, H, W]"
        why = (f"{layer} reads dim 1 as the {want} channels; {x} has shape {shape(got)}: height, width, then "
               f"channels, the layout numpy, PIL and matplotlib keep images in. So it found {got[1]} channels.")
        fix = f"{x} = {x}.permute(0, 3, 1, 2)   # [N, H, W, C] to [N, C, H, W]"
    elif (matmul and error.get("module_type") == "Linear" and len(got) >= 3
          and math.prod(got[1:]) == int(matmul.group(3))):
        title = f"{x} reaches {layer} unflattened, with shape {shape(got)}"
        why = (f"{layer} takes [N, {matmul.group(3)}]: one row of {matmul.group(3)} features per sample; {x} still "
               f"has its convolution's shape {shape(got)}, and a Linear reads only the last dim ({got[-1]}), "
               f"so it got rows of {got[-1]}. Flatten each sample first.")
        fix = f"{x} = torch.flatten({x}, 1)   # [{got[0]}, {math.prod(got[1:])}]; or nn.Flatten() before the Linear"
    elif matmul and error.get("module_type") == "Linear" and len(got) == 2 and got[1] != int(matmul.group(3)):
        want, out = int(matmul.group(3)), int(matmul.group(4))
        title = f"{layer} takes {want} features and gets {got[1]}"
        why = (f"{layer} was made with in_features={want}, and its input has {got[1]} features per sample "
               f"({shape(got)}). in_features is the size of each sample that reaches the layer (after "
               f"convolutions: channels × height × width as they leave them); nn.LazyLinear({out}) reads it from the "
               "first batch.")
        fix = f"nn.Linear({got[1]}, {out})   # in_features as the input has them; or nn.LazyLinear({out})"
    elif _ONE_PER_CHANNEL in message:
        title = f"{layer} got a batch of one sample in training mode"
        why = (f"{layer} normalizes each channel by the batch's mean and variance while training, and a batch of "
               f"one ({shape(got)}) has one value per channel: no variance to divide by. A DataLoader's last batch "
               "can be of one; predicting one sample is done in eval mode, with the running statistics.")
        fix = "model.eval()   # to predict one sample\n# or drop a last batch of one: DataLoader(..., drop_last=True)"
    elif unbatched and len(got) == int(unbatched.group(1)) - 1:
        title = f"{x} has shape {shape(got)}; {layer} takes [N, C, ...] (or [C, ...])"
        why = (f"{layer} takes a batch of images with their channels ({unbatched.group(2)} dims) or one image with "
               f"its channels ({unbatched.group(1)} dims); {x} has {len(got)}: a single image without its channel "
               "dim.")
        fix = f"{x} = {x}[None, None]   # [1, 1, {', '.join(str(d) for d in got)}]: one image of one channel"
    elif rnn and len(got) == 3 and int(rnn.group(1)) in got[:-1]:
        want = int(rnn.group(1))
        title = f"{x} has its {want} features on dim {got.index(want)}; {layer} reads them last"
        why = (f"{layer} was made with input_size={want} and reads the features on the last dim; {x} has shape "
               f"{shape(got)}, its features before its {got[-1]} time steps.")
        fix = f"{x} = {x}.transpose(1, 2)   # features last"
    else:
        return []
    return [hint("input-shape", "error", title, why, line=int(line), nodes=[],
                 evidence=[("line", f"{line}: {view.line_text(int(line)).strip()}"), ("input shape", shape(got))],
                 fix=fix)]
