"""The errors beginners meet first, said with their cause and fix (NOTE [an error said with its
cause] in analysis/hints/errors.py): each mistake raises torch's own message in a bare run, the
hint names the line and the tensor, and the fix the hint gives, put in the program, is one torch
runs without error (and then no error hint is said)."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest

H = "import torch\nimport numpy as np\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"


def _bare(code: str) -> BaseException | None:
    """What torch raises running ``code`` without gradtrace, or None."""
    try:
        exec(compile(code, "<bare>", "exec"), {"__name__": "__main__"})
    except Exception as e:
        return e
    return None


def _line_of(code: str, text: str) -> int:
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


def _replace_line(code: str, line: int, new: str) -> str:
    """``code`` with its line ``line`` replaced by ``new`` (lines indented as the old one)."""
    lines = code.splitlines()
    indent = re.match(r"\s*", lines[line - 1]).group(0)  # type: ignore[union-attr]
    lines[line - 1:line] = textwrap.indent(new, indent).splitlines()
    return "\n".join(lines) + "\n"


def _error_hint(doc: dict[str, Any], code: str) -> dict[str, Any]:
    return next(h for h in (doc.get("analysis") or {}).get("hints", []) if h["code"] == code)


ERROR_CODES = {"leaf-changed-in-place", "backward-non-scalar", "float64-input", "target-dtype", "target-shape",
               "target-out-of-range", "input-shape"}

SGD_BY_HAND = H + """
w = torch.randn(3, requires_grad=True)
x, y = torch.randn(10, 3), torch.randn(10)
for step in range(3):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w -= 0.1 * w.grad
"""

INIT_IN_PLACE = H + """
W = torch.zeros(4, 3, requires_grad=True)
W[0] = 1.0
(torch.randn(5, 4) @ W).sum().backward()
"""

NOT_REDUCED = H + """
model = nn.Linear(4, 1)
criterion = nn.MSELoss(reduction='none')
x, y = torch.randn(8, 4), torch.randn(8, 1)
loss = criterion(model(x), y)
loss.backward()
"""

FROM_NUMPY = H + """
model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
data = np.random.randn(16, 3)
x = torch.from_numpy(data)
pred = model(x)
"""

CONV_FROM_NUMPY = H + """
net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU())
images = np.random.rand(2, 1, 8, 8)
batch = torch.tensor(images)
out = net(batch)
"""

CE_FLOAT_LABELS = H + """
model = nn.Linear(4, 3)
x = torch.randn(6, 4)
labels = torch.tensor([0., 2., 1., 0., 1., 2.])
loss = F.cross_entropy(model(x), labels)
loss.backward()
"""

BCE_INT_LABELS = H + """
model = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
loss = criterion(model(x).squeeze(1), y)
loss.backward()
"""


def test_a_leaf_updated_by_hand_outside_no_grad_is_said_with_its_fix(run: Any) -> None:
    """torch's "a leaf Variable that requires grad is being used in an in-place operation", on
    SGD by hand; the fix (the update under ``torch.no_grad()``, then the gradient cleared)
    trains ``w`` in torch's own run."""
    line = _line_of(SGD_BY_HAND, "w -= 0.1")
    e = _bare(SGD_BY_HAND)
    assert e is not None and "leaf Variable that requires grad" in str(e)
    doc = run(SGD_BY_HAND)
    hint = _error_hint(doc, "leaf-changed-in-place")
    assert hint["line"] == line and hint["title"].startswith("w changed in place") and "no_grad" in hint["fix"]
    leaf = next(n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n.get("name") == "w")
    assert doc["error"]["node"] == leaf["id"] and hint["nodes"] == [leaf["id"]]  # the page marks w
    fixed = _replace_line(SGD_BY_HAND, line, hint["fix"])
    ns: dict[str, Any] = {}
    exec(compile(fixed, "<fixed>", "exec"), ns)
    assert ns["w"].grad is not None and not ns["w"].grad.any()  # cleared after the update
    assert not ERROR_CODES & {h["code"] for h in (run(fixed).get("analysis") or {}).get("hints", [])}


def test_a_view_of_a_leaf_set_in_place_is_said_with_its_fix(run: Any) -> None:
    line = _line_of(INIT_IN_PLACE, "W[0] = 1.0")
    e = _bare(INIT_IN_PLACE)
    assert e is not None and "a view of a leaf Variable" in str(e)
    hint = _error_hint(run(INIT_IN_PLACE), "leaf-changed-in-place")
    assert hint["line"] == line and hint["title"].startswith("W changed in place") and "a view of it" in hint["message"]
    fixed = _replace_line(INIT_IN_PLACE, line, hint["fix"])
    assert _bare(fixed) is None


def test_backward_from_a_loss_not_reduced_is_said_with_its_fix(run: Any) -> None:
    """torch's "grad can be implicitly created only for scalar outputs"; the hint names the
    root and its shape, and its fix (the mean) runs."""
    line = _line_of(NOT_REDUCED, "loss.backward()")
    e = _bare(NOT_REDUCED)
    assert e is not None and "only for scalar outputs" in str(e)
    hint = _error_hint(run(NOT_REDUCED), "backward-non-scalar")
    assert hint["line"] == line and "loss [8, 1]" in [ev["value"] for ev in hint["evidence"]]
    assert "reduction='none'" in hint["message"]
    fixed = _replace_line(NOT_REDUCED, line, hint["fix"].splitlines()[0])
    ns: dict[str, Any] = {}
    exec(compile(fixed, "<fixed>", "exec"), ns)
    assert ns["model"].weight.grad is not None


@pytest.mark.parametrize("program, name, numpy_line", [(FROM_NUMPY, "x", "x = torch.from_numpy"),
                                                       (CONV_FROM_NUMPY, "batch", "batch = torch.tensor")],
                         ids=["linear", "conv"])
def test_a_float64_input_from_numpy_is_said_with_its_fix(run: Any, program: str, name: str, numpy_line: str) -> None:
    """torch's dtype errors of a float64 input to float32 weights; the hint names the input and
    the numpy line it came from, and its fix (``.float()`` before the call) runs."""
    e = _bare(program)
    assert e is not None and re.search(r"Double and Float|\(double\) and bias type \(float\)", str(e))
    doc = run(program)
    hint = _error_hint(doc, "float64-input")
    line = doc["error"]["line"]
    assert hint["title"].startswith(f"{name} is float64") and hint["line"] == line
    assert f"line {_line_of(program, numpy_line)}" in hint["message"]
    fixed = _replace_line(program, line, hint["fix"].split("#")[0].strip() + "\n" + program.splitlines()[line - 1])
    assert _bare(fixed) is None


@pytest.mark.parametrize("program, name, kind", [(CE_FLOAT_LABELS, "labels", "Float"), (BCE_INT_LABELS, "y", "Long")],
                         ids=["cross-entropy", "bce"])
def test_targets_of_the_wrong_dtype_are_said_with_their_fix(run: Any, program: str, name: str, kind: str) -> None:
    """torch's target dtype errors: float labels to cross-entropy, integer labels to BCE with
    logits; the fix converts the target the hint names, and the loss then backpropagates."""
    e = _bare(program)
    assert e is not None and ("target dtype" in str(e) or "can't be cast" in str(e))
    doc = run(program)
    hint = _error_hint(doc, "target-dtype")
    line = doc["error"]["line"]
    assert hint["line"] == line and hint["title"].startswith(f"{name} ") and kind in hint["title"]
    fixed = _replace_line(program, line, hint["fix"] + "\n" + program.splitlines()[line - 1])
    ns: dict[str, Any] = {}
    exec(compile(fixed, "<fixed>", "exec"), ns)
    assert ns["model"].weight.grad is not None
    assert not ERROR_CODES & {h["code"] for h in (run(fixed).get("analysis") or {}).get("hints", [])}


def test_other_errors_get_none_of_these_hints(run: Any) -> None:
    """An index out of range, a float target of the logits' shape (class probabilities: no error),
    and a model in float64 given float64 data: none of these hints is said."""
    shape = H + "x = torch.randn(3)\ny = x[5]\n"
    probs = H + ("logits = torch.randn(4, 3, requires_grad=True)\n"
                 "F.cross_entropy(logits, torch.softmax(torch.randn(4, 3), 1)).backward()\n")
    double = H + "model = nn.Linear(3, 1).double()\nmodel(torch.from_numpy(np.random.randn(4, 3))).sum().backward()\n"
    assert _bare(shape) is not None and _bare(probs) is None and _bare(double) is None
    for program in (shape, probs, double):
        assert not ERROR_CODES & {h["code"] for h in (run(program).get("analysis") or {}).get("hints", [])}


LOSS_ERRORS = {
    "column-labels": (H + """
model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
x, y = torch.randn(8, 4), torch.randint(0, 3, (8, 1))
loss = criterion(model(x), y)
loss.backward()
""", "target-shape", "0D or 1D target tensor expected"),
    "classes-last": (H + """
emb, head = nn.Embedding(10, 8), nn.Linear(8, 10)
tokens = torch.randint(0, 10, (2, 5))
logits = head(emb(tokens))
loss = F.cross_entropy(logits, tokens)
loss.backward()
""", "target-shape", "Expected target size"),
    "flattened-logits": (H + """
emb, head = nn.Embedding(10, 8), nn.Linear(8, 10)
tokens = torch.randint(0, 10, (2, 5))
logits = head(emb(tokens))
loss = F.cross_entropy(logits.view(-1, 10), tokens)
loss.backward()
""", "target-shape", "to match target batch_size"),
    "bce-column": (H + """
model = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
x, y = torch.randn(8, 4), torch.randint(0, 2, (8,)).float()
loss = criterion(model(x), y)
loss.backward()
""", "target-shape", "must be the same as input size"),
    "one-hot": (H + """
model = nn.Linear(4, 3)
x, labels = torch.randn(8, 4), torch.randint(0, 3, (8,))
target = F.one_hot(labels, 3)
loss = F.cross_entropy(model(x), target)
loss.backward()
""", "target-dtype", "target with class probabilities, got Long"),
    "labels-from-one": (H + """
model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
x, y = torch.randn(8, 4), torch.tensor([1, 2, 3, 1, 2, 3, 1, 2])
loss = criterion(model(x), y)
loss.backward()
""", "target-out-of-range", "Target 3 is out of bounds"),
}


@pytest.mark.parametrize("case", sorted(LOSS_ERRORS))
def test_a_loss_given_a_target_it_cannot_read_is_said_with_its_fix(run: Any, case: str) -> None:
    """Each of torch's loss errors, raised in a bare run; the hint on the loss's line; its fix's
    first line, put in the program (an assignment of the target before the loss, or the loss's
    line rewritten), is one torch runs to the end: the loss backpropagates."""
    program, code, message = LOSS_ERRORS[case]
    e = _bare(program)
    assert e is not None and message in str(e), e
    doc = run(program)
    hint = _error_hint(doc, code)
    line = doc["error"]["line"]
    assert hint["line"] == line == _line_of(program, "loss = ")
    first = hint["fix"].splitlines()[0].split("#")[0].strip()
    fixed = _replace_line(program, line, first if first.startswith("loss =") else first + "\n"
                          + program.splitlines()[line - 1].strip())
    assert _bare(fixed) is None, fixed
    assert not ERROR_CODES & {h["code"] for h in (run(fixed).get("analysis") or {}).get("hints", [])}


LAYOUT_ERRORS = {
    "channels-last": (H + """
net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
images = torch.from_numpy(np.random.rand(4, 32, 32, 3).astype(np.float32))
out = net(images)
""", "have 3 channels, but got 32 channels"),
    "not-flattened": (H + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 5)
        self.fc = nn.Linear(16 * 24 * 24, 10)
    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x)
out = Net()(torch.randn(2, 1, 28, 28))
""", "shapes cannot be multiplied"),
    "batch-of-one": (H + """
model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
out = model(torch.randn(1, 4))
""", "more than 1 value per channel"),
    "image-alone": (H + """
net = nn.Conv2d(1, 4, 3)
img = torch.rand(28, 28)
out = net(img)
""", "input to conv2d"),
    "features-before-time": (H + """
rnn = nn.GRU(8, 16, batch_first=True)
seq = torch.randn(2, 8, 30)
out, h = rnn(seq)
""", "must be equal to input_size"),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_ERRORS))
def test_a_layer_given_another_layout_is_said_with_its_fix(run: Any, case: str) -> None:
    """Each layout error, torch's own message in a bare run; the hint on the error's line; its
    fix's first line put before that line (an assignment of the input) is one torch runs."""
    program, message = LAYOUT_ERRORS[case]
    e = _bare(program)
    assert e is not None and message in str(e), e
    doc = run(program)
    hint = _error_hint(doc, "input-shape")
    line = doc["error"]["line"]
    assert hint["line"] == line
    first = hint["fix"].splitlines()[0].split("#")[0].strip()
    fixed = _replace_line(program, line, first + "\n" + program.splitlines()[line - 1].strip())
    assert _bare(fixed) is None, fixed
    assert not ERROR_CODES & {h["code"] for h in (run(fixed).get("analysis") or {}).get("hints", [])}


def test_a_linear_made_for_another_size_is_said_with_the_size_it_gets(run: Any) -> None:
    """The classic size worked out by hand after convolutions (16·4·4 where 16·12·12 arrive):
    the hint gives the in_features the input has, and the layer made so runs."""
    program = H + """
net = nn.Sequential(nn.Conv2d(1, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 10))
out = net(torch.randn(2, 1, 28, 28))
"""
    e = _bare(program)
    assert e is not None and "(2x2304 and 256x10)" in str(e)
    hint = _error_hint(run(program), "input-shape")
    assert "takes 256 features and gets 2304" in hint["title"]
    made = hint["fix"].split("#")[0].strip()
    assert _bare(program.replace("nn.Linear(16 * 4 * 4, 10)", made)) is None
