"""The run document: the one schema every stage of gradtrace speaks.

capture produces it, the sandbox returns it as JSON, the web process validates it
(never trusting the job), storage keeps it, share links serve it, and the browser and the
notebook client read it. Each field's ``description=`` is its meaning for users: served at
``/openapi.json`` and made into docs/CONTRACT.md's tables (NOTE [the contract's tables come
from the models] in schema/contract_doc.py). Everything after the first version is an
addition, never a rename. A change that adds, renames or removes a field needs a new
``SCHEMA_VERSION`` and an upgrade step in :mod:`gradtrace.storage.normalize`, so a reader
can tell from the version which fields a document may have.

NOTE [encoding of awkward values]
    * Tensor values are :class:`TensorValue`. ``values`` is the nested list of numbers when the
      tensor has at most ``VALUES_LIMIT`` (1,000) elements, else ``None``; ``stats`` is always
      given when the tensor is non-empty and of a numeric type.
    * NaN, +inf and -inf are the strings ``"nan"``, ``"inf"``, ``"-inf"`` (JSON has no such
      numbers). Everything else is a plain JSON number.
    * Complex tensors encode each element as ``[real, imag]``; stats are over the magnitude.
    * Booleans encode as JSON ``true``/``false``; integer tensors as JSON integers.
    * Text that the snippet printed is capped; ``stdout_truncated`` says when it was cut and the
      text ends with a marker line.
    * A run that hit a cap (nodes, events) ends with status ``graph_limit``; what was recorded
      until then is kept.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gradtrace.schema.analysis import Analysis
from gradtrace.schema.base import _Model, _optional
from gradtrace.schema.goals import GoalReport

SCHEMA_VERSION = 2
"""1: the first published schema. 2: the tensor file (``TensorValue.key``, ``Node.output``,
``Node.value_end``, ``RunDocument.tensors``), all optional, so a version-1 document is a
version-2 document without a tensor file."""
VALUES_LIMIT = 1000

Status = Literal["ok", "error", "timeout", "memory_limit", "output_limit", "graph_limit", "crashed"]
Device = Literal["cpu", "cuda", "auto"]
Number = int | float | str
"""A JSON number, or one of the strings ``"nan"``, ``"inf"``, ``"-inf"``."""


def written_defaults(model: type[BaseModel]) -> dict[str, Any]:
    """``{key: default}`` of every field ``model`` always writes and may be left out of its
    input: what a writer of finished documents (capture) fills in, taken from the model itself
    so that the two cannot drift apart. Mutable defaults are fresh on each call."""
    out: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        if f.is_required() or f.exclude_if is not None:
            continue
        out[f.alias or name] = f.get_default(call_default_factory=True)
    return out


class TensorStats(_Model):
    min: Number | None = Field(None, description="smallest element")
    max: Number | None = Field(None, description="largest element")
    mean: Number | None = Field(None, description="mean")
    norm: Number | None = Field(None, description="2-norm")


class TensorValue(_Model):
    """A tensor's value as the browser shows it: full values when small, stats always."""

    shape: list[int] = Field(description="the tensor's shape")
    dtype: str = Field(description="its dtype")
    values: object | None = Field(None, description="the nested list of numbers, when at most 1,000 elements")
    stats: TensorStats | None = Field(None, description="`TensorStats`")
    stale: bool | None = _optional("read after the tensor had been changed in place")
    layout: str | None = _optional(
        "a tensor that is not strided (`sparse_coo`, `sparse_csr`, …): `values` is its dense form when small, "
        "`stats` those of its dense form")
    nonzero: int | None = _optional("sparse tensors: how many elements are nonzero; boolean ones: how many are true")
    note: str | None = _optional(
        "why `values` or `stats` are missing, or what they stand for (a meta tensor has no data; a quantized one "
        "shows dequantized numbers)")
    key: str | None = _optional(
        "the tensor's key in the run's tensor file (`n12.out0`, `e3.gi1`: see \"The tensor file\"), when it was "
        "kept there; absent when it was not (`tensors.left_out`)")


class OutputMeta(_Model):
    """Shape, dtype and device of one output of a multi-output function node."""

    shape: list[int] | None = Field(None, description="one output's shape")
    dtype: str | None = Field(None, description="its dtype")
    device: str | None = Field(None, description="its device")


class SavedTensor(_Model):
    """One tensor a function node saved for its backward (``_saved_*``)."""

    name: str = Field(description="the saved attribute without `_saved_` (`self`, `result`)")
    shape: list[int] | None = Field(None, description="its shape")
    dtype: str | None = Field(None, description="its dtype")
    bytes: int = Field(0, description="its size")
    is_parameter: bool = Field(False, description="whether it is a module parameter")
    is_input: bool = Field(False, description="whether it is one of the node's inputs")
    freed_after_pass: int | None = Field(None, description=(
        "the backward pass after which autograd freed it, or null while held"))
    value: TensorValue | None = _optional(
        "its value as saved (`TensorValue`), for saved tensors of at most 1,000 elements; custom Functions' "
        "`ctx.saved_tensors` alike. It spends the document's values budget after the events, in node order: past it, "
        "stats only. Absent for larger ones, and for a kernel's partly unwritten scratch (CTC's `log_alpha`, "
        "`result1` of `CtcLossBackward0/1`), which is not in the tensor file either")


SavedArg = bool | int | float | str | list[int]
"""A node's small non-tensor saved argument (NOTE [saved arguments] in capture/saved.py): a bool,
an int (a dim, an index), a float (an exponent), a short name (``"tanh"``), a list of at most 8
ints (dims), or ``"nan"``/``"inf"``/``"-inf"`` for a non-finite float."""


class ModuleCall(_Model):
    """A module on the call stack when a node was made."""

    path: str = Field(description="a module on the call stack")
    call: int = Field(description="which call of that module this was, from 0")


class ModuleMode(_Model):
    """A call of a mode-sensitive module (dropout, batch norm) whose mode differs from its call
    before: NOTE [a module's modes] in capture/modules.py."""

    call: int = Field(description="which call of the module, from 0")
    training: bool = Field(description="the module's `training` flag at that call")
    grad: bool = Field(description="whether gradients were enabled")
    line: int | None = Field(None, description="the snippet line that called the model")
    root: ModuleCall | None = Field(None, description=(
        "the outermost named module call around it (the model's call), whose nodes a backward pass may walk"))


class ModuleInfo(_Model):
    """One module called during the run."""

    path: str = Field(description="the module's path, as `Node.module` writes it (`cell`, `layers.3.self_attn`)")
    type: str = Field(description="its class name (`GRUCell`)")
    calls: int = Field(description="how many times it was called")
    training_no_grad_lines: list[int] | None = _optional(
        "dropout and batch-norm modules only: the snippet lines (first ten) that called it in training mode with "
        "gradients disabled, an evaluation that forgot `model.eval()` (the `train-mode-in-eval` hint)")
    # NOTE [training mode under no_grad] in capture/modules.py
    modes: list[ModuleMode] | None = _optional(
        "dropout and batch-norm modules only: its first call and each call whose mode (training, gradients) "
        "differs from its call before (`ModuleMode`, the first 32), when it changed at all (the "
        "`eval-mode-in-training` hint)")
    dropout_in_eval_lines: list[int] | None = _optional(
        "the snippet lines (first ten) where this module's own forward, called in eval mode, called `F.dropout` "
        "(`dropout1d`/`2d`/`3d`) without `training=`: its default, True, drops units whatever `model.eval()` says "
        "(the `train-mode-in-eval` hint)")
    # NOTE [functional dropout ignores eval()] in capture/dropouts.py
    frozen: list[str] | None = _optional(
        "its own parameters that do not require grad (`weight`, `bias`), which autograd records no node for: a "
        "frozen layer; absent when none is")
    # NOTE [frozen parameters] in capture/definitions.py
    unreached: list[str] | None = _optional(
        "its own parameters that require grad but that no recorded node used (never called in `forward`, read only "
        "through `.data` or under `no_grad`), in a run with a backward pass; absent when none is")


class GradReset(_Model):
    """A leaf's ``.grad`` cleared between two accumulations (``zero_grad()``, ``x.grad = None``)."""

    at: int = Field(description=(
        "the length of `grad_history` when `.grad` was cleared: the next accumulation starts afresh"))
    kind: Literal["none", "zero"] = Field(description=(
        "`none` (set to None, as `zero_grad()` does by default) or `zero` (zeroed in place)"))
    line: int | None = Field(None, description="the line that cleared it, when known")


class GradEdit(_Model):
    """A leaf's ``.grad`` changed other than by accumulation (GradScaler's unscale, clipping,
    ``.grad.mul_()``, a post-accumulate hook): NOTE [gradient edits] in capture/gradedits.py."""

    at: int = Field(description=(
        "`len(grad_history)` when it happened: the edit applies on top of the `at`-th accumulation (a later "
        "accumulation adds to the edited value unless a `GradReset` at the same `at` cleared it)"))
    line: int | None = Field(None, description=(
        "the snippet line that read or changed that `.grad` before the change was found (`scaler.step(opt)`, the "
        "clipping line), or the backward call's line for an edit made inside a backward; null when not known"))
    value: TensorValue | None = Field(None, description="the `.grad` right after the edit (`TensorValue`)")
    in_backward: bool = Field(False, description=(
        "made inside a backward call (a hook), after the leaf's accumulation in it"))


class ValueStep(_Model):
    """A leaf's data changed between two looks (an optimizer's step): NOTE [a leaf's value around
    each step] in capture/valuesteps.py."""

    at: int = Field(description=(
        "`len(grad_history)` before the change: the step follows the `at`-th accumulation"))
    norm: Number = Field(description="‖w‖ before the change")
    delta: Number = Field(description="‖w_after − w_before‖")


class StateRestarts(_Model):
    """A leaf's optimizer state started afresh after its first step: NOTE [an optimizer made
    afresh] in capture/library.py."""

    optimizer: str = Field(description="the class of the optimizer that stepped it (`Adam`)")
    steps: int = Field(description="the steps of optimizers that keep state (moments, momentum) that updated the leaf")
    restarts: int = Field(description=(
        "how many of those steps, after its first, found no state of the leaf in their optimizer (a new "
        "optimizer object, so its moments or momentum started from zero again)"))
    line: int | None = Field(None, description="the line of the step of the first restart")


class Cut(_Model):
    """Why a tensor has no history although it came from one (``detach()``, ``no_grad``)."""

    kind: Literal["detach", "no_grad", "inference_mode", "data"] = Field(description=(
        "`detach`, `no_grad`, `inference_mode` or `data`"))
    line: int | None = Field(None, description="the line that cut it")
    source: str | None = Field(None, description="the node it was computed from, when known")


class Node(_Model):
    id: str = Field(description="unique in the document, deterministic for the same snippet and seed")
    kind: Literal["function", "tensor"] = Field(description="`function` or `tensor`")
    name: str | None = Field(None, description=(
        "function nodes: the autograd class without namespace (`MulBackward0`); tensor nodes: how the snippet "
        "reaches the tensor (`x`, `model.0.weight`, `ws[3]`, `d['a']`), or null; a variable that is a `for` loop's "
        "target names a tensor only when nothing else does (after `for k, p in model.named_parameters()` the last "
        "parameter is still `model.2.bias`, not `p`)"))
    line: int | None = Field(None, description=(
        "the snippet line whose execution made the node; inside library or module code, the snippet line that called "
        "into it"))
    module: str | None = Field(None, description="the path of the `nn.Module` whose call made it (`model.0`), or null")
    shape: list[int] | None = Field(None, description="of the tensor, or of a function node's output")
    dtype: str | None = Field(None, description="likewise")
    device: str | None = Field(None, description="likewise")
    grad: TensorValue | None = Field(None, description=(
        "tensor nodes: `.grad` at the end of the run (`TensorValue`), or null"))
    # --- additions after the first version ---
    seq: int | None = Field(None, description="function nodes: creation order, from autograd's sequence numbers")
    role: str | None = Field(None, description="tensor nodes: `leaf`, `root`, `retained` or `cut`")
    created_in_pass: int | None = Field(None, description=(
        "function nodes made during backward pass N with `create_graph=True`"))
    saved: list[SavedTensor] = Field(default_factory=list, description=(
        "the tensors the node saved for backward (`SavedTensor`)"))
    saved_bytes: int = Field(0, description="their total size")
    value: TensorValue | None = Field(None, description="tensor nodes: the value when it was recorded")
    grad_history: list[TensorValue] = Field(default_factory=list, description=(
        "tensor nodes: `.grad` after each accumulation, in order, across passes"))
    cut: Cut | None = Field(None, description="why a tensor has no history although it came from one (`Cut`)")
    outputs: list[OutputMeta] | None = _optional("per-output metadata of a node with several outputs (`OutputMeta`)")
    saved_unread: bool | None = _optional(
        "the saved tensors were not read, since reading them would change the run (checkpointing, or `saved_once`)")
    saved_once: bool | None = _optional(
        "a custom Function whose class sets `clear_saved_tensors_on_access`: its saved tensors may be read once, by "
        "its `backward`, so the recorder left them unread")
    roles: list[str] | None = _optional("every role of a tensor that plays several")
    module_stack: list[ModuleCall] | None = _optional(
        "the called modules on the stack when the node was made, outermost first (`ModuleCall`); the last one is "
        "`module`")
    grad_resets: list[GradReset] | None = _optional(
        "leaves: where `.grad` was cleared between accumulations (`GradReset`)")
    grad_edits: list[GradEdit] | None = _optional(
        "leaves: where `.grad` was changed in place other than by autograd's accumulation, in order (`GradEdit`): "
        "GradScaler's unscale, `clip_grad_norm_`, `.grad.mul_()`, `_foreach_*` and fused kernels, an optimizer's "
        "internals, a post-accumulate hook in a backward; found by comparing `.grad` with what was last seen "
        "(identity, version, then values), never from a list of ops. The final `grad` is always torch's at the end")
    saved_args: dict[str, SavedArg] | None = _optional(
        "function nodes: the op's small non-tensor arguments saved for backward, by name without `_saved_` "
        '(`{"exponent": 2}`, `{"dim": -1, "index": 0}`): bools, int64s, floats (`"nan"`, `"inf"`, `"-inf"` when '
        'not finite), short names (`"tanh"`), lists of at most 8 ints; None and sizes/strides (`*_sym_*`) left out')
    def_line: int | None = _optional(
        "leaves: the snippet line that made the tensor a leaf requiring grad (`torch.randn(3, requires_grad=True)`, "
        "`requires_grad_()`, `t.requires_grad = True`, or a parameter's module construction `model = nn.Linear(3, "
        "4)`), where `line` is its first use; absent when not seen")
    # NOTE [where leaves are defined] in capture/definitions.py
    tied: list[str] | None = _optional(
        "parameters reached under several module paths (weight tying, `lm_head.weight = emb.weight`): every path, "
        "`name` first; the parameter is one node")
    var: str | None = _optional(
        "function nodes: the snippet variable first bound to the node's output (`h` for `h = torch.tanh(x @ W)`), "
        "when there was one")
    # NOTE [variables of intermediates] in capture/definitions.py
    output: list[TensorValue | None] | None = _optional(
        "function nodes: each forward output as the op returned it (stats, and its `key` in the tensor file), null "
        "for an output not seen; absent when none was kept. A node a `create_graph=True` pass made (`created_in_pass`) "
        "has what its op returned in that pass: a gradient penalty's `TanhBackwardBackward0` holds the gradient "
        "it computed")
    value_steps: list[ValueStep] | None = _optional(
        "leaves: each change of the leaf's data between backward calls (an optimizer's step), in "
        "order, as two norms (`ValueStep`); absent when it never changed")
    value_end: TensorValue | None = _optional(
        "leaves: the value at the end of the run (after an optimizer's update); absent without a tensor file")
    optimized: bool | None = _optional(
        "leaves: true when an optimizer whose `step()` ran held the leaf in its `param_groups`; absent otherwise")
    # NOTE [leaves an optimizer holds] in capture/library.py
    stepped_twice: list[int] | None = _optional(
        "leaves: the lines of two `step()`s of different optimizers that updated the leaf with one and the same "
        "gradient (no backward or `zero_grad()` between them): a parameter two optimizers hold, updated twice per "
        "backward (the `stepped-twice` hint); absent otherwise")
    # NOTE [one gradient, two optimizers] in capture/library.py
    state_restarts: StateRestarts | None = _optional(
        "leaves: an optimizer's state for the leaf started afresh after its first step (`StateRestarts`): an "
        "optimizer made again inside the training loop (the `optimizer-recreated` hint); absent otherwise")
    # NOTE [an optimizer made afresh] in capture/library.py


class HookChange(_Model):
    """A tensor hook that replaced a gradient: the value before and after it."""

    before: TensorValue | None = Field(None, description="the gradient the hook received")
    after: TensorValue | None = Field(None, description="the gradient it returned")


class Edge(_Model):
    """Forward data flow, from producer to consumer (docs/CONTRACT.md)."""

    source: str = Field(description="the producer's id")
    target: str = Field(description="the consumer's id")
    input_nr: int | None = Field(None, description="which entry of the target's `next_functions` this is")
    cut: bool | None = _optional("true for a dashed edge from a cut tensor to the op that used it (a library "
                                 "module's call counts as one op: its output's node); no gradient flows back "
                                 "along it. Where the cut tensor came from is its node's `cut.source`")


class Event(_Model):
    phase: Literal["forward", "backward"] = Field(description="`forward` or `backward`")
    node: str = Field(description="the node concerned")
    pass_: int | None = Field(default=None, alias="pass", description="backward events: the index of the backward pass")
    line: int | None = Field(None, description="the snippet line running at that moment")
    grad_outputs: list[TensorValue | None] | None = Field(None, description=(
        "backward events: the gradients flowing into the node (`TensorValue` or null each)"))
    grad_inputs: list[TensorValue | None] | None = Field(None, description=(
        "backward events: the gradients it passes on"))
    # --- additions ---
    grad: TensorValue | None = Field(None, description="`AccumulateGrad` events: the leaf's `.grad` after accumulation")
    changed_by_hook: bool = Field(False, description=(
        "whether a tensor hook replaced a gradient here, or a module's full backward hook "
        "(`register_full_backward_hook` returning new `grad_input`), on its `BackwardHookFunctionBackward` node"))
    hook_changes: list[HookChange] | None = _optional("each replaced gradient, before and after (`HookChange`)")


class BackwardPass(_Model):
    """One call of ``backward`` / ``autograd.backward`` / ``autograd.grad``."""

    index: int = Field(description="0, 1, … in call order")
    api: Literal["Tensor.backward", "torch.autograd.backward", "torch.autograd.grad", "engine"] = Field(description=(
        "`Tensor.backward`, `torch.autograd.backward`, `torch.autograd.grad`, or `engine` (a backward the snippet "
        "did not call itself: a reentrant checkpoint's inner backward, one on another thread)"))
    line: int | None = Field(None, description="the line that called it")
    roots: list[str] = Field(default_factory=list, description="the tensor nodes it started from")
    retain_graph: bool = Field(False, description="as passed")
    create_graph: bool = Field(False, description="as passed")
    freed_bytes: int = Field(0, description="saved tensors autograd freed at its end")
    completed: bool = Field(True, description="false when it raised, or when a limit stopped recording inside it")
    within: int | None = _optional(
        "a backward run inside another pass (a reentrant checkpoint's inner backward, which recomputes the "
        "checkpointed function and gives its parameters their gradients): the index of that pass; absent for the "
        "snippet's own passes")


class FoldedCall(_Model):
    """One of torch's own checks (``gradcheck``, ``gradgradcheck``) called on a line, folded:
    its nodes and backward passes are torch's, not the snippet's, and are not in the graph."""

    api: str = Field(description="`torch.autograd.gradcheck` or `torch.autograd.gradgradcheck`")
    line: int | None = Field(None, description="the snippet line that called it")
    calls: int = Field(1, description="how many times it ran on that line with this verdict")
    verdict: Literal["passed", "failed", "raised"] = Field(description=(
        "`passed` (it returned True), `failed` (it returned False, or raised torch's `GradcheckError`), `raised` "
        "(another exception)"))
    message: str | None = Field(None, description=(
        "torch's message for a failure (its first line), or the exception raised; null when it passed"))
    nodes: int = Field(0, description="how many autograd nodes the check made (not shown)")


class RunError(_Model):
    type: str = Field(description="the exception's class name")
    message: str = Field(description="its message")
    line: int | None = Field(None, description="the snippet line where it was raised, or null when not in the snippet")
    node: str | None = Field(None, description="for autograd errors (in-place change, freed graph): the node concerned")
    detail: str | None = Field(None, description="a sentence that explains an autograd error in the snippet's terms")
    inplace_line: int | None = _optional("the line of the in-place change that invalidated a saved tensor")
    inplace_op: str | None = _optional("in-place hazards: the op that changed the saved tensor (`add_`)")
    inplace_node: str | None = _optional("in-place hazards: the node that op created, when it created one")
    saved_version: int | None = _optional("in-place hazards: the tensor's version when it was saved")
    current_version: int | None = _optional("in-place hazards: its version when backward read it")
    saved_name: str | None = _optional("in-place hazards: the saved tensor's name (`result`)")
    module: str | None = _optional("an exception raised inside a module: the innermost module that raised (`model.2`)")
    module_type: str | None = _optional("that module's class (`Linear`)")
    op: str | None = _optional("the torch op or function that raised, when known (`linear`)")
    shapes: list[list[int]] | None = _optional("the shapes of the tensor arguments the raising module got")


class Graph(_Model):
    nodes: list[Node] = Field(default_factory=list, description="every `Node`")
    edges: list[Edge] = Field(default_factory=list, description="every `Edge`")


class MemorySummary(_Model):
    saved_bytes_total: int = Field(0, description="every tensor saved for backward, in bytes")
    freed_bytes_total: int = Field(0, description="what backward passes freed")


class RecorderErrors(_Model):
    """How often the recorder itself failed during a run, and the first few messages."""

    count: int = Field(0, description="how often the recorder failed during the run")
    first: list[str] = Field(default_factory=list, description="the first few messages")


class ForwardTangent(_Model):
    """One torch call that carried a forward-mode tangent (NOTE [forward-mode AD] in
    gradtrace/capture/tangents.py)."""

    index: int = Field(description="0, 1, … in call order")
    op: str = Field(description="the torch call (`make_dual`, `sin`, `mul`)")
    line: int | None = Field(None, description="the snippet line that ran it")
    level: int = Field(0, description="the dual level it ran at (nested `dual_level()` blocks count up from 0)")
    inputs: list[int] = Field(default_factory=list, description="the earlier steps whose results it took as arguments")
    primal: TensorValue | None = Field(None, description="its result's primal value (`TensorValue`)")
    tangent: TensorValue | None = Field(None, description=(
        "its result's tangent (`TensorValue`): what `forward_ad.unpack_dual(result).tangent` gives"))
    name: str | None = Field(None, description="the snippet's variable that holds its result at the end, or null")
    node: str | None = Field(None, description=(
        "the backward-graph node the same call made, when one of its inputs also required grad; else null"))


class UnrecordedThread(_Model):
    """A thread started during the run whose autograd work the document lacks: NOTE [other
    threads' graphs] in capture/threads.py."""

    name: str = Field(description="the thread's name")
    nodes: int = Field(0, description="autograd nodes its torch calls made")
    backward_calls: int = Field(0, description="backward calls it made")
    unrecorded_backward_calls: int = Field(0, description=(
        "of those, the ones on graphs that were not recorded when they ran"))


class LeftOutTensor(_Model):
    """A tensor the tensor file does not hold, and why."""

    key: str = Field(description="the key it would have had (`n12.out0`, `n7.sself`)")
    bytes: int = Field(0, description="its size in bytes")
    reason: str = Field(description=(
        "`budget` (past the run's byte budget), `dtype` (a dtype or layout safetensors cannot hold: complex, "
        "sparse, quantized, a subclass), `changed` (changed in place before it could be copied), `transform` (a "
        "tensor of a functorch transform such as `vmap`, which has no values outside it)"))


class TensorFile(_Model):
    """The run's tensor file (see "The tensor file"): a safetensors file beside the document
    holding every kept tensor exactly, by key."""

    format: Literal["safetensors"] = Field("safetensors", description="always `safetensors`")
    sha256: str = Field(description="SHA-256 of the file's bytes (hex): the document's `id` covers its tensors")
    bytes: int = Field(description="the file's size in bytes")
    count: int = Field(description=(
        "how many tensors it holds: those named by a TensorValue's `key`, and the saved tensors no node "
        "made (data without gradient, and parameters saved after a backward pass, as they were then), as "
        "`n{id}.s{name}` (function node `n{id}`'s `saved` entry `name`)"))
    budget_bytes: int = Field(description="the run's byte budget for tensors")
    left_out: list[LeftOutTensor] = Field(default_factory=list, description=(
        "tensors not kept, most important first, at most 200 (`LeftOutTensor`)"))
    left_out_count: int = Field(0, description="how many tensors were not kept, all of them")
    left_out_bytes: int = Field(0, description="their bytes, all of them")


class RunDocument(_Model):
    """The answer of ``POST /api/runs`` and the content of a share link (docs/CONTRACT.md)."""

    # stored in an INTEGER column, hence the bound
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=2**31 - 1,
                                description=f"the schema this document follows ({SCHEMA_VERSION})")
    id: str = Field(description="stable id of the document: the same snippet, seed and machine give the same id")
    status: Status = Field(description=(
        "`ok`, `error`, `timeout` (wall clock or CPU time), `memory_limit`, `output_limit`, `graph_limit` or "
        "`crashed` (ended without a result)"))
    error: RunError | None = Field(None, description="the snippet's exception (`RunError`), or null")
    stdout: str = Field("", description="what the snippet printed (capped)")
    device: str = Field("cpu", description="the device it ran on")
    graph: Graph = Field(default_factory=Graph, description="`{nodes, edges}`, as far as the run got")
    events: list[Event] = Field(default_factory=list, description=(
        "the timeline the page replays (`Event`), in time order"))
    # --- additions ---
    message: str | None = Field(None, description="a sentence for the user when the run hit a limit")
    stdout_truncated: bool = Field(False, description="whether `stdout` was cut")
    code: str | None = Field(None, description="the snippet")
    seed: int | None = Field(None, description="the seed it ran with")
    passes: list[BackwardPass] = Field(default_factory=list, description=(
        "one `BackwardPass` per call of `backward`, `autograd.backward` or `autograd.grad`"))
    memory: MemorySummary = Field(default_factory=MemorySummary, description="`MemorySummary`")
    torch_version: str | None = Field(None, description="the torch that ran it")
    recorder_errors: RecorderErrors | None = _optional("what the recorder itself could not record (`RecorderErrors`)")
    modules: list[ModuleInfo] | None = _optional(
        "every named module called during the run, in order of first call (`ModuleInfo`)")
    tangents: list[ForwardTangent] | None = _optional(
        "forward-mode AD (`torch.autograd.forward_ad`): every torch call whose result carried a tangent, in order, "
        "one `ForwardTangent` each (the first 2,000)")
    tangents_more: int | None = _optional("how many more calls carried a tangent past those listed")
    folded: list[FoldedCall] | None = _optional(
        "torch's own gradient checks the snippet called (`gradcheck`, `gradgradcheck`), one `FoldedCall` per calling "
        "line and verdict; their nodes and passes are torch's and are not in `graph`, `events` or `passes`")
    # NOTE [torch's own checks are folded] in capture/folded.py


    threads_unrecorded: list[UnrecordedThread] | None = _optional(
        "threads started during the run whose graphs or backward calls were not recorded, because the recorder "
        "follows the thread that runs the snippet (`UnrecordedThread`); absent when there were none. The "
        "`threads-unrecorded` hint says so")
    analysis: Analysis | None = _optional(
        "what gradtrace found in the run, computed from this document alone: hints and the first NaN or infinity "
        "(`Analysis`); absent when there is nothing to say")
    tensors: TensorFile | None = _optional(
        "the run's tensor file (`TensorFile`, see \"The tensor file\"); absent when none was written")
    goals: GoalReport | None = _optional(
        "an exercise's goals checked on this run (`GoalReport`), when the request carried `goals` or `exercise`; the "
        "stored run itself has none (its `id` is the run's)")
    # the goal models: schema/goals.py
