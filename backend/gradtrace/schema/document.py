"""The run document: the one schema every stage of gradtrace speaks.

capture produces it, the sandbox returns it as JSON, the web process validates it
(never trusting the job), storage keeps it, share links serve it, and the browser and the
notebook client read it. docs/CONTRACT.md describes it for users (``tests/test_contract.py``
keeps the two in step); everything after the first version is
an addition, never a rename. A change that renames or removes a field needs a new
``SCHEMA_VERSION`` and an upgrade step in :mod:`gradtrace.storage.normalize`.

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

SCHEMA_VERSION = 1
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
    min: Number | None = None
    max: Number | None = None
    mean: Number | None = None
    norm: Number | None = None


class TensorValue(_Model):
    """A tensor's value as the browser shows it: full values when small, stats always."""

    shape: list[int]
    dtype: str
    values: object | None = None
    stats: TensorStats | None = None
    stale: bool | None = _optional()
    """True when the value was read after the tensor had been changed in place."""
    layout: str | None = _optional()
    """A tensor that is not strided: ``sparse_coo``, ``sparse_csr``, ...; ``values`` is then its
    dense form (when small) and ``stats`` those of its dense form."""
    nonzero: int | None = _optional()
    """Sparse tensors: how many of its elements are nonzero; boolean ones: how many are true."""
    note: str | None = _optional()
    """Why ``values`` or ``stats`` are missing or what they stand for (a meta tensor has no
    data; a quantized one shows its dequantized numbers)."""
    key: str | None = _optional()
    """The tensor's key in the run's tensor file (``n12.out0``, ``e3.gi1``: docs/CONTRACT.md,
    "The tensor file"), when it was kept there; absent when it was not (``tensors.left_out``)."""


class OutputMeta(_Model):
    """Shape, dtype and device of one output of a multi-output function node."""

    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None


class SavedTensor(_Model):
    """One tensor a function node saved for its backward (``_saved_*``)."""

    name: str
    shape: list[int] | None = None
    dtype: str | None = None
    bytes: int = 0
    is_parameter: bool = False
    is_input: bool = False
    freed_after_pass: int | None = None
    """Index of the backward pass after which autograd freed it, or null while still held."""
    value: TensorValue | None = _optional()
    """Its value as saved, for tensors of at most ``VALUES_LIMIT`` elements (absent for larger
    ones and in documents written before this addition); past the document's values budget it
    carries stats only."""


SavedArg = bool | int | float | str | list[int]
"""A node's small non-tensor saved argument (NOTE [saved arguments] in capture/saved.py): a bool,
an int (a dim, an index), a float (an exponent), a short name (``"tanh"``), a list of at most 8
ints (dims), or ``"nan"``/``"inf"``/``"-inf"`` for a non-finite float."""


class ModuleInfo(_Model):
    """One module called during the run."""

    path: str
    """The module's path as ``Node.module`` writes it (``cell``, ``model.0``, ``layers.3.self_attn``)."""
    type: str
    """Its class name (``GRUCell``, ``Linear``)."""
    calls: int
    """How many times it was called during the run."""
    training_no_grad_lines: list[int] | None = _optional()
    """Dropout and batch-norm modules: the snippet lines that called it in training mode with
    gradients disabled (an evaluation block under ``no_grad`` that forgot ``model.eval()``),
    first ten; absent when none did (NOTE [training mode under no_grad] in capture/modules.py)."""
    frozen: list[str] | None = _optional()
    """Its own parameters (``weight``, ``bias``) that do not require grad, so autograd records
    no node for them: a frozen layer; absent when none is (NOTE [frozen parameters] in
    capture/definitions.py)."""
    unreached: list[str] | None = _optional()
    """Its own parameters that require grad but that no recorded node used (never called in
    ``forward``, read only through ``.data`` or under ``no_grad``), in a run with a backward
    pass; absent when none is."""


class ModuleCall(_Model):
    """A module on the call stack when a node was made."""

    path: str
    call: int
    """0-based index of that call of that module in the run."""


class GradReset(_Model):
    """A leaf's ``.grad`` cleared between two accumulations (``zero_grad()``, ``x.grad = None``)."""

    at: int
    """``len(grad_history)`` when the reset happened: the next accumulation starts afresh."""
    kind: Literal["none", "zero"]
    """``.grad`` set to None (``zero_grad()``'s default, ``x.grad = None``) or zeroed in place."""
    line: int | None = None
    """The snippet line that cleared it, when known."""


class GradEdit(_Model):
    """A leaf's ``.grad`` changed other than by accumulation (GradScaler's unscale, clipping,
    ``.grad.mul_()``, a post-accumulate hook): NOTE [gradient edits] in capture/gradedits.py."""

    at: int
    """``len(grad_history)`` when it happened: the edit applies on top of that accumulation."""
    line: int | None = None
    """The snippet line that read or changed the ``.grad`` before the change was found (the
    backward call's line for an edit made inside a backward), when known."""
    value: TensorValue | None = None
    """The ``.grad`` right after the edit."""
    in_backward: bool = False
    """Made inside a backward call (a hook), after the leaf's accumulation in it."""


class Cut(_Model):
    """Why a tensor has no history although it came from one (``detach()``, ``no_grad``)."""

    kind: Literal["detach", "no_grad", "inference_mode", "data"]
    line: int | None = None
    source: str | None = None
    """Id of the node the tensor was computed from, when known."""


class Node(_Model):
    id: str
    kind: Literal["function", "tensor"]
    name: str | None = None
    line: int | None = None
    module: str | None = None
    shape: list[int] | None = None
    dtype: str | None = None
    device: str | None = None
    grad: TensorValue | None = None
    # --- additions after the first version ---
    seq: int | None = None
    """Creation order of function nodes (0, 1, ...), from autograd's sequence numbers."""
    role: str | None = None
    """Tensor nodes: ``leaf``, ``root`` (a backward started here), ``retained`` or ``cut``."""
    created_in_pass: int | None = None
    """Function nodes created during a backward pass with ``create_graph=True``."""
    saved: list[SavedTensor] = Field(default_factory=list)
    saved_bytes: int = 0
    value: TensorValue | None = None
    """Tensor nodes: the tensor's value when it was recorded."""
    grad_history: list[TensorValue] = Field(default_factory=list)
    """Tensor nodes: ``.grad`` after each accumulation, in order, across passes."""
    cut: Cut | None = None
    outputs: list[OutputMeta] | None = _optional()
    """Function nodes with several outputs (``max``, ``unbind``): each output's metadata."""
    saved_unread: bool | None = _optional()
    """True when the saved tensors were not read, because reading them would change the run
    (checkpointed nodes recompute on access, and ``saved_once`` nodes allow one read)."""
    saved_once: bool | None = _optional()
    """True for a custom Function whose class sets ``clear_saved_tensors_on_access``: its saved
    tensors may be read once, by its ``backward``, so they were not read (``saved_unread``)."""
    roles: list[str] | None = _optional()
    """Tensor nodes that play several roles (a leaf that is also a backward root)."""
    module_stack: list[ModuleCall] | None = _optional()
    """The called modules on the stack when the node was made, outermost first; the last
    entry's path is ``module``."""
    grad_resets: list[GradReset] | None = _optional()
    """Tensor (leaf) nodes: where ``.grad`` was cleared between accumulations."""
    grad_edits: list[GradEdit] | None = _optional()
    """Tensor (leaf) nodes: where ``.grad`` was changed in place other than by accumulation,
    in order; the last one's ``value`` is what the next accumulation adds to (absent: none)."""
    saved_args: dict[str, SavedArg] | None = _optional()
    """Function nodes: the op's small non-tensor arguments saved for backward, by name without
    ``_saved_`` (``{"exponent": 2}``, ``{"dim": -1, "index": 0}``); absent when none."""
    def_line: int | None = _optional()
    """Tensor (leaf) nodes: the snippet line that made the tensor a leaf requiring grad (a
    factory call with ``requires_grad=True``, ``requires_grad_()``, the construction of a
    parameter's module), where ``line`` is its first use; absent when not seen
    (NOTE [where leaves are defined] in capture/definitions.py)."""
    tied: list[str] | None = _optional()
    """Tensor (parameter) nodes: every module path that reaches this very parameter, when
    there are several (weight tying, ``lm_head.weight = emb.weight``), ``name`` first."""
    var: str | None = _optional()
    """Function nodes: the snippet variable first bound to the node's output (``h`` for
    ``h = torch.tanh(x @ W)``), when there was one (NOTE [variables of intermediates] in
    capture/definitions.py)."""
    output: list[TensorValue | None] | None = _optional()
    """Function nodes: each forward output as the op returned it (stats, and its ``key`` in
    the tensor file), ``null`` for an output not seen; absent when none was kept."""
    value_end: TensorValue | None = _optional()
    """Tensor (leaf) nodes: the value at the end of the run (after an optimizer's update);
    absent without a tensor file."""


class HookChange(_Model):
    """A tensor hook that replaced a gradient: the value before and after it."""

    before: TensorValue | None = None
    after: TensorValue | None = None


class Edge(_Model):
    """Forward data flow, from producer to consumer (docs/CONTRACT.md)."""

    source: str
    target: str
    input_nr: int | None = None
    """Index of this input in the target's ``next_functions``."""
    cut: bool | None = _optional()
    """True for the dashed edge from where a cut tensor came from to the cut tensor."""


class Event(_Model):
    phase: Literal["forward", "backward"]
    node: str
    pass_: int | None = Field(default=None, alias="pass")
    line: int | None = None
    grad_outputs: list[TensorValue | None] | None = None
    grad_inputs: list[TensorValue | None] | None = None
    # --- additions ---
    grad: TensorValue | None = None
    """AccumulateGrad events: the leaf's ``.grad`` after accumulation."""
    changed_by_hook: bool = False
    hook_changes: list[HookChange] | None = _optional()


class BackwardPass(_Model):
    """One call of ``backward`` / ``autograd.backward`` / ``autograd.grad``."""

    index: int
    api: Literal["Tensor.backward", "torch.autograd.backward", "torch.autograd.grad", "engine"]
    """``engine``: a backward the snippet's code did not call itself (a reentrant checkpoint's
    inner backward, a backward on another thread), seen when the engine ran it."""
    line: int | None = None
    roots: list[str] = Field(default_factory=list)
    retain_graph: bool = False
    create_graph: bool = False
    freed_bytes: int = 0
    completed: bool = True
    within: int | None = _optional()
    """A backward run inside another pass (a reentrant checkpoint's inner backward): the
    index of that pass. Absent for the snippet's own passes."""


class FoldedCall(_Model):
    """One of torch's own checks (``gradcheck``, ``gradgradcheck``) called on a line, folded:
    its nodes and backward passes are torch's, not the snippet's, and are not in the graph."""

    api: str
    """``torch.autograd.gradcheck`` or ``torch.autograd.gradgradcheck``."""
    line: int | None = None
    calls: int = 1
    """How many times it ran on that line with this verdict."""
    verdict: Literal["passed", "failed", "raised"]
    """``passed``: it returned True; ``failed``: it returned False or raised torch's
    ``GradcheckError``; ``raised``: it raised another exception."""
    message: str | None = None
    """torch's message for a failure (its first line), or the exception raised."""
    nodes: int = 0
    """Autograd nodes the check made (and that are not shown)."""


class RunError(_Model):
    type: str
    message: str
    line: int | None = None
    node: str | None = None
    """The node concerned, for autograd errors (in-place hazard, freed graph)."""
    detail: str | None = None
    inplace_line: int | None = _optional()
    """In-place hazards: the snippet line of the in-place op that invalidated a saved tensor."""
    inplace_op: str | None = _optional()
    """In-place hazards: the op that changed the saved tensor (``add_``)."""
    inplace_node: str | None = _optional()
    """In-place hazards: the node that in-place op created, when it created one."""
    saved_version: int | None = _optional()
    """In-place hazards: the tensor's version when it was saved (torch: "expected version 0")."""
    current_version: int | None = _optional()
    """In-place hazards: its version when backward read it (torch: "is at version 1")."""
    saved_name: str | None = _optional()
    """In-place hazards: the saved tensor's name (``result``)."""
    module: str | None = _optional()
    """An exception raised inside a module: the innermost module path that raised."""
    module_type: str | None = _optional()
    """Its class name (``Linear``)."""
    op: str | None = _optional()
    """The torch op or function that raised, when known (``linear``)."""
    shapes: list[list[int]] | None = _optional()
    """Shapes of the tensor arguments the raising module got."""


class Graph(_Model):
    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


class MemorySummary(_Model):
    saved_bytes_total: int = 0
    freed_bytes_total: int = 0


class RecorderErrors(_Model):
    """How often the recorder itself failed during a run, and the first few messages."""

    count: int = 0
    first: list[str] = Field(default_factory=list)


class ForwardTangent(_Model):
    """One torch call that carried a forward-mode tangent (NOTE [forward-mode AD] in
    gradtrace/capture/tangents.py)."""

    index: int
    op: str
    """The torch call (``make_dual``, ``mul``, ``sin``)."""
    line: int | None = None
    level: int = 0
    """The dual level it ran at (``forward_ad.dual_level()``; nested levels count up)."""
    inputs: list[int] = Field(default_factory=list)
    """The earlier steps whose results it took."""
    primal: TensorValue | None = None
    tangent: TensorValue | None = None
    """The tangent of its result: the directional derivative carried forward."""
    name: str | None = None
    """The snippet's variable that holds its result at the end (``dual_output``)."""
    node: str | None = None
    """The backward-graph node the same call made (when its inputs also required grad)."""


class UnrecordedThread(_Model):
    """A thread started during the run whose autograd work the document lacks: NOTE [other
    threads' graphs] in capture/threads.py."""

    name: str
    """The thread's name (``threading.Thread(name=...)``, else torch's ``Thread-1 (work)``)."""
    nodes: int = 0
    """Autograd nodes its torch calls made."""
    backward_calls: int = 0
    """Backward calls it made (``backward``, ``autograd.grad``)."""
    unrecorded_backward_calls: int = 0
    """Of those, the ones whose graph was not recorded when they ran (no pass in ``passes``)."""


class LeftOutTensor(_Model):
    """A tensor the tensor file does not hold, and why."""

    key: str = Field(description="The key it would have had (``n12.out0``).")
    bytes: int = Field(0, description="Its size in bytes.")
    reason: str = Field(description="Why it is not in the file: ``budget`` (past the run's "
                        "byte budget), ``dtype`` (a dtype or layout safetensors cannot hold: "
                        "complex, sparse, quantized, a subclass), ``changed`` (changed in place "
                        "before it could be copied), ``transform`` (a tensor of a functorch "
                        "transform such as ``vmap``, which has no values outside it).")


class TensorFile(_Model):
    """The run's tensor file (docs/CONTRACT.md, "The tensor file"): a safetensors file beside
    the document holding every kept tensor exactly, by key."""

    format: Literal["safetensors"] = Field("safetensors", description="The file's format.")
    sha256: str = Field(description="SHA-256 of the file's bytes (hex), so the document's id "
                        "covers its tensors.")
    bytes: int = Field(description="The file's size in bytes.")
    count: int = Field(description="How many tensors it holds.")
    budget_bytes: int = Field(description="The run's byte budget for tensors.")
    left_out: list[LeftOutTensor] = Field(default_factory=list, description="Tensors not kept, "
                                          "most important first (at most 200 listed).")
    left_out_count: int = Field(0, description="How many tensors were not kept, all of them.")
    left_out_bytes: int = Field(0, description="Their bytes, all of them.")


class RunDocument(_Model):
    """The answer of ``POST /api/runs`` and the content of a share link (docs/CONTRACT.md)."""

    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=2**31 - 1)
    """The schema this document follows; stored in an INTEGER column, hence the bound."""
    id: str
    status: Status
    error: RunError | None = None
    stdout: str = ""
    device: str = "cpu"
    graph: Graph = Field(default_factory=Graph)
    events: list[Event] = Field(default_factory=list)
    # --- additions ---
    message: str | None = None
    """A sentence for the user when the run hit a limit ("ran longer than 5 s")."""
    stdout_truncated: bool = False
    code: str | None = None
    seed: int | None = None
    passes: list[BackwardPass] = Field(default_factory=list)
    memory: MemorySummary = Field(default_factory=MemorySummary)
    torch_version: str | None = None
    recorder_errors: RecorderErrors | None = _optional()
    """Problems of the recorder itself (never the snippet's): what could not be recorded."""
    modules: list[ModuleInfo] | None = _optional()
    """Every named module called during the run, in order of first call."""
    tangents: list[ForwardTangent] | None = _optional()
    """Forward-mode AD: the torch calls that carried a tangent, in order."""
    tangents_more: int | None = _optional()
    """Steps past the first 2,000 that carried a tangent and are not listed."""
    folded: list[FoldedCall] | None = _optional()
    """torch's own checks the snippet called, one entry per line and verdict (NOTE [torch's own
    checks are folded] in gradtrace/capture/folded.py)."""


    threads_unrecorded: list[UnrecordedThread] | None = _optional()
    """Threads started during the run whose graphs or backward passes were not recorded (the
    recorder follows the block's thread), by name; absent when there were none."""
    analysis: Analysis | None = _optional()
    """What :mod:`gradtrace.analysis` found: hints and the first non-finite values."""
    tensors: TensorFile | None = _optional()
    """The run's tensor file (docs/CONTRACT.md, "The tensor file"); absent when none was written."""
    goals: GoalReport | None = _optional()
    """An exercise's goals checked on this run (``schema/goals.py``), when the run was asked to."""
