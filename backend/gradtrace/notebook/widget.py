"""The anywidget behind ``gradtrace.show()``: the viewer of ``frontend/src/embed.js`` with the
step and the selection synced both ways.

NOTE [tensors through the comm]
    The inspector's tensors (``frontend/src/tensors/source.js`` ``kernelSource``) are asked
    for one at a time, ``{type: "tensor", key, seq}``; the kernel answers with a custom message
    ``{type: "tensor", seq, dtype, shape}`` (or ``error``) and the tensor's raw bytes as its one
    binary buffer, sliced from the run's tensor file (``doc.tensor_bytes()``): never base64,
    never the whole file.

NOTE [documents through the comm]
    The document travels once, as a binary buffer holding its gzip-compressed canonical JSON
    (``_doc``), not as a JSON string trait: a GRU-200 document is ≈4 MB of JSON and ≈0.5 MB
    compressed, and binary buffers skip the comm's JSON encoding on both sides. The front end
    inflates it with ``DecompressionStream`` (native, no library).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anywidget
import traitlets

from gradtrace.analysis.numbers import number
from gradtrace.notebook.assets import asset_text
from gradtrace.notebook.carried_tensors import tensor_slice
from gradtrace.notebook.documents import shown_document, tensor_bytes_of

SMALL_TENSOR = 10_000
"""Tensor values are handed back as torch tensors up to this many elements (the document holds
values only for small tensors anyway: schema VALUES_LIMIT)."""


@dataclass(frozen=True)
class Selection:
    """The node selected in the widget: what it is, where it came from, and its tensors."""

    id: str | None
    name: str | None
    kind: str | None
    line: int | None
    module: str | None
    value: Any = None
    """The tensor's value (a torch tensor) when the document holds it (roots, retained
    tensors), else None."""
    grad: Any = None
    """A torch tensor, else None: for a tensor its ``.grad`` at the end of the run; for a
    function node the gradient that last flowed into it (its first ``grad_outputs``)."""


class GradtraceWidget(anywidget.AnyWidget):  # type: ignore[misc]
    """One run in a notebook output: graph, timeline and transport, inspector, code."""

    _doc = traitlets.Bytes(b"").tag(sync=True)
    _selected = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    step = traitlets.Int(-1).tag(sync=True)
    """The timeline step shown (0 … number of events); -1 until the view has loaded."""
    run_url = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Unicode("620px").tag(sync=True)
    _check = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    """The latest gradient check (a GradcheckResult as JSON), shown in the inspector."""
    _explain = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    """The latest "Explain this node" answer, ``{seq, answer}`` or ``{seq, error}``."""

    @property
    def _esm(self) -> str:  # read by AnyWidget.__init__; a missing bundle is a clear error
        return asset_text("widget.js")

    def __init__(self, document: Any, *, step: int | None = None, run_url: str | None = None,
                 height: str = "620px", tensors: bytes | None = None) -> None:
        self._shown = shown_document(document)  # NOTE [one document path]: its bytes as they are
        self._node_index: dict[str, dict[str, Any]] | None = None
        self._tensor_file: bytes | None = tensors if tensors is not None else tensor_bytes_of(document)
        super().__init__(_doc=self._shown.compressed(), step=-1 if step is None else step,
                         run_url=run_url or "", height=height)
        self.on_msg(self._on_msg)

    checker: Callable[[GradtraceWidget, Any], Any] | None = None
    """What checks a node numerically: set by a layer that records
    (``gradtrace.gradcheck.notebook.enable_checks``; the ``%%gradtrace`` cell does it)."""

    def check(self, target: Any = None, **options: Any) -> Any:
        """Check the gradient of a node numerically and show the check in the widget.

        ``target``: a node's id or name (a leaf, a parameter, a custom Function's node), a
        ``TargetSpec``, or None for the selected node. Needs a checker
        (:attr:`checker`); returns the GradcheckResult.
        """
        if self.checker is None:
            raise RuntimeError("this widget cannot check gradients: call "
                               "gradtrace.gradcheck.notebook.enable_checks(w) (the %%gradtrace cell does)")
        result = self.checker(self, target if target is not None else (self._selected or {}).get("id"), **options)
        self._check = result.model_dump(mode="json")
        return result

    def explain(self, node: str | None = None, index: list[int] | None = None) -> dict[str, Any]:
        """A backward node's rule per input worked out with the recorded numbers at element
        ``index`` (``gradtrace.analysis.explain.explain_node``); ``node``: its id or name, or
        None for the selected node."""
        from gradtrace.analysis.explain import explain_node

        key = node if node is not None else (self._selected or {}).get("id")
        found = self._nodes.get(key or "") or next(
            (n for n in self._nodes.values() if n.get("name") == key and n.get("kind") == "function"), None)
        if found is None:
            raise KeyError(f"no node {key!r} in this run")
        return explain_node(self.document, found["id"], None, index)

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """The inspector's "Check gradient" button and "Explain this node" panel
        (frontend/src/widget/index.js)."""
        if isinstance(content, dict) and content.get("type") == "explain":
            self._answer_explain(content)
            return
        if isinstance(content, dict) and content.get("type") == "tensor":
            self._answer_tensor(content)
            return
        if not isinstance(content, dict) or content.get("type") != "check":
            return
        from gradtrace.errors import GradtraceError

        try:
            if content.get("every"):
                self.check("every parameter")
            else:
                self.check(content.get("node"))
        except (GradtraceError, KeyError, ValueError, RuntimeError) as e:
            self._check = {"verdict": "inconclusive", "status": "refused", "message": str(e).strip("'\"")}

    def _answer_explain(self, content: dict[str, Any]) -> None:
        from gradtrace.errors import GradtraceError

        index = content.get("index")
        if not (isinstance(index, list) and len(index) <= 16 and all(type(i) is int and i >= 0 for i in index)):
            index = None
        try:
            answer: dict[str, Any] = {"answer": self.explain(str(content.get("node")), index)}
        except (GradtraceError, KeyError, ValueError) as e:
            answer = {"error": str(e).strip("'\"")}
        self._explain = {"seq": content.get("seq"), **answer}

    def _answer_tensor(self, content: dict[str, Any]) -> None:
        """NOTE [tensors through the comm]."""
        key, seq = content.get("key"), content.get("seq")
        if not isinstance(key, str) or len(key) > 200:
            self.send({"type": "tensor", "seq": seq, "error": "a tensor is asked for by its key"})
            return
        if self._tensor_file is None:
            self.send({"type": "tensor", "seq": seq, "error": "this run's document carries no tensor file"})
            return
        try:
            dtype, shape, raw = tensor_slice(self._tensor_file, key)
        except (KeyError, ValueError) as e:
            self.send({"type": "tensor", "seq": seq, "error": str(e).strip("'\"")})
            return
        self.send({"type": "tensor", "seq": seq, "key": key, "dtype": dtype, "shape": shape}, buffers=[raw])

    @property
    def document(self) -> dict[str, Any]:
        """The run document as a dict (parsed from the bytes sent, when first read)."""
        return self._shown.doc

    @property
    def _nodes(self) -> dict[str, dict[str, Any]]:
        if self._node_index is None:
            self._node_index = {n["id"]: n for n in self.document.get("graph", {}).get("nodes", [])}
        return self._node_index

    @property
    def selected(self) -> Selection | None:
        """The node clicked in the graph (or set from Python), with its tensor values."""
        sel = self._selected
        if not sel:
            return None
        node = self._nodes.get(sel.get("id") or "")
        grad = None
        if node is not None:
            grad = node.get("grad")
            if grad is None and node.get("kind") == "function":
                grad = self._last_grad_flowing_into(node["id"])
        return Selection(id=sel.get("id"), name=sel.get("name"), kind=sel.get("kind"), line=sel.get("line"),
                         module=sel.get("module"),
                         value=_tensor(node.get("value")) if node else None, grad=_tensor(grad))

    @selected.setter
    def selected(self, key: str | None) -> None:
        """Select a node by its id, or by its name (the first node of that name)."""
        if key is None:
            self._selected = None  # type: ignore[assignment]
            return
        node = self._nodes.get(key) or next((n for n in self._nodes.values() if n.get("name") == key), None)
        if node is None:
            raise KeyError(f"no node with id or name {key!r} in this run")
        self._selected = {"id": node["id"], "name": node.get("name"), "kind": node.get("kind"),
                          "line": node.get("line"), "module": node.get("module")}

    def _last_grad_flowing_into(self, node_id: str) -> dict[str, Any] | None:
        for ev in reversed(self.document.get("events") or []):
            if ev.get("node") == node_id and ev.get("phase") == "backward":
                outs = [g for g in ev.get("grad_outputs") or [] if g]
                return outs[0] if outs else None
        return None


def _tensor(tv: dict[str, Any] | None) -> Any:
    """A TensorValue of the document as a torch tensor, when it holds the values and is small."""
    if not tv or tv.get("values") is None:
        return None
    shape = tv.get("shape") or []
    numel = 1
    for d in shape:
        numel *= d
    if numel > SMALL_TENSOR:
        return None
    import torch  # only here: showing a document needs no torch

    def fix(v: Any) -> Any:
        if isinstance(v, list):
            return [fix(x) for x in v]
        return number(v) if isinstance(v, str) else v

    dtype = getattr(torch, str(tv.get("dtype", "float32")).removeprefix("torch."), None)
    values = fix(tv["values"])
    try:
        t = torch.tensor(values, dtype=dtype if isinstance(dtype, torch.dtype) else None)
    except (TypeError, RuntimeError, ValueError):
        t = torch.tensor(values)
    return t.reshape(shape) if list(t.shape) != list(shape) and t.numel() == numel else t
