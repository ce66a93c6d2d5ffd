"""Turn a :class:`~gradtrace.capture.recorder.Recorder` into a run document.

NOTE [documents without pydantic on the hot path]
    A GRU unrolled 200 steps gives 3,200 nodes and as many events; validating and dumping that
    through pydantic costs more than the whole forward+backward. So the document is written
    here directly in its final form: every field of every model, defaults included, exactly
    what ``RunDocument.model_validate(doc).model_dump(by_alias=True, mode="json")`` gives
    (``tests/capture/test_document.py`` holds this to be true for every golden document).
    ``record.document()`` still hands notebooks a pydantic ``RunDocument``, its graph and
    events read as views of these bytes until the models are asked for (NOTE [a document
    built on first use] in gradtrace/notebook/run.py).

NOTE [the core's keys, written by hand]
    The C++ core (``cxx/entries.h``, ``cxx/events.h``, ``cxx/values.h``) writes each model's
    keys as string literals, already in canonical (sorted) order, a run of constant keys
    appended in one go between the values. That restatement stays for speed: it is what lets
    the core write a GRU-200's 3 MB of nodes and events without a per-key look-up or sort,
    and generating C++ from the models would add a code generator to the core's build (which
    also runs from a wheel on a user's machine). ``tests/capture/test_schema_source.py`` reads
    the writers' keys out of the C++ source and holds them equal to the models, field by
    field and in order; capture's Python defaults come from the models themselves
    (:func:`~gradtrace.schema.document.written_defaults`), and the strict validator's types
    are generated from them (NOTE [a strict twin generated from each model] in
    ``schema/fast.py``).

Values captured lazily are encoded here, in a fixed order (tensor nodes, events, then the
saved tensors of function nodes: NOTE [saved values] in :mod:`gradtrace.capture.saved`), so
the values budget (NOTE [document size] in :mod:`gradtrace.capture.values`) is spent the same
way on every identical run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradtrace.analysis.dynamics.read import file_reader
from gradtrace.analysis.run import analyze_parts
from gradtrace.capture.definitions import unreached
from gradtrace.capture.frames import NameIndex, loop_targets
from gradtrace.capture.recorder import Recorder
from gradtrace.capture.tensordoc import attach
from gradtrace.collector import gc_paused
from gradtrace.schema import SCHEMA_VERSION, Cut, Node, RunError
from gradtrace.schema.canonical import CanonicalText, canonical_json
from gradtrace.schema.document import written_defaults

_NODE_DEFAULTS = written_defaults(Node)  # NOTE [documents without pydantic on the hot path]
_ERROR_DEFAULTS = written_defaults(RunError)
_CUT_DEFAULTS = written_defaults(Cut)


def _final_grad(rec: Recorder, t: torch.Tensor) -> dict[str, Any] | None:
    """``.grad`` at the end of the run, read only where autograd keeps one (no warning for
    non-leaf tensors)."""
    if not (t.is_leaf or t.retains_grad):
        return None
    g = t.grad
    if g is None:
        return None
    handle = rec.edits.final(t)
    if handle is not None:  # unchanged since last seen (NOTE [gradient edits] in gradedits.py)
        return rec.values.resolve(handle)
    return rec.values.encode_now(g)


def _cut(cut: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if cut is None else {"kind": cut["kind"],
                                     **{k: cut.get(k, d) for k, d in _CUT_DEFAULTS.items()}}


def _nodes(rec: Recorder) -> list[dict[str, Any] | None]:
    resolve = rec.values.resolve
    tensors = {doc["id"]: t for t, doc in rec.tensors.values()}
    # NOTE [names] at the end: a deep look-up over the snippet's globals comes first
    # (`model.0.proj.weight` rather than the `self.proj.weight` seen inside a forward); the name
    # seen during the run stays when the globals no longer hold the tensor (loop variables,
    # function locals). Tensors also get their variable only after the call that made them
    # returns (`d = y.detach()`), which only this late look-up can see.
    # NOTE [where a tensor lives] in frames.py: a loop's leftover variable names nothing first.
    late = (NameIndex(None, [rec.namespace], loop_vars=loop_targets(rec.filename))
            if rec.namespace is not None else None)
    out: list[dict[str, Any] | None] = []
    for doc in rec.nodes:
        if doc is None:  # kept by the core (NOTE [node entries in C++])
            out.append(doc)
            continue
        d = {**_NODE_DEFAULTS, "saved": [], "grad_history": [], **doc}  # fresh lists
        if d["kind"] == "tensor":
            t = tensors[d["id"]]
            if late is not None:
                d["name"] = late.name_of(t) or d["name"]
                tied = late.paths_of(t)
                if len(tied) > 1:  # one parameter reached under several module paths
                    d["tied"] = [d["name"], *(p for p in tied if p != d["name"])]
            d["grad"] = _final_grad(rec, t)
            if d.get("role") == "leaf" and rec.is_optimized(t):  # NOTE [leaves an optimizer holds]
                d["optimized"] = True
                twice = rec.steps_twice(t)
                if twice:  # NOTE [one gradient, two optimizers] in library.py
                    d["stepped_twice"] = twice
                restarts = rec.restarts_of(t)
                if restarts is not None:  # NOTE [an optimizer made afresh] in library.py
                    d["state_restarts"] = restarts
            d["value"] = resolve(d["value"])
            d["grad_history"] = [resolve(h) for h in d["grad_history"]]
            if "grad_edits" in d:  # NOTE [gradient edits] in gradedits.py
                d["grad_edits"] = [{**e, "value": resolve(e["value"])} for e in d["grad_edits"]]
            if "grad_resets" in d:  # NOTE [grad resets]: between two accumulations only
                resets = [r for r in d["grad_resets"] if r["at"] < len(d["grad_history"])]
                if resets:
                    d["grad_resets"] = resets
                else:
                    del d["grad_resets"]
            d["cut"] = _cut(d["cut"])
        out.append(d)
    return out


def _memory(rec: Recorder) -> dict[str, int]:
    """NOTE [graph memory]: each node's ``saved_bytes`` counts its saved tensors in full. The
    total counts activations and inputs per node and each parameter once (a parameter saved
    by several nodes is one tensor); ``freed`` counts what backward released, parameters
    excluded (releasing a reference to a parameter frees nothing)."""
    freed = sum(int(p.doc["freed_bytes"]) for p in rec.passes)
    return {"saved_bytes_total": int(rec.core.saved_total()), "freed_bytes_total": freed}


def _error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {**_ERROR_DEFAULTS, **error}


def _core_events(rec: Recorder) -> bytes:
    """The events' canonical JSON, written by the core (NOTE [why C++]), spending what is
    left of the values budget after the nodes."""
    text, left = rec.core.events_json(rec.values.values_budget)
    rec.values.values_budget = left
    return bytes(text)


def _runs(items: list[Any], core_part: type) -> list[tuple[bool, list[Any]]]:
    """``items`` in document order as (the core's?, run): each run of the core's parts
    (``None`` nodes, ``range``s of edges) and each run of Python's dicts as one list. Python's
    are few (leaves, roots): found by one comprehension, not a Python loop over every node."""
    own = [i for i, d in enumerate(items) if not isinstance(d, core_part)]
    out: list[tuple[bool, list[Any]]] = []
    start = 0
    for i in own:
        if i > start:
            out.append((True, items[start:i]))
        if out and not out[-1][0]:
            out[-1][1].append(items[i])
        else:
            out.append((False, [items[i]]))
        start = i + 1
    if len(items) > start:
        out.append((True, items[start:]))
    return out


def _core_graph(rec: Recorder, nodes: list[dict[str, Any] | None]) -> bytes:
    """The graph's canonical JSON: the core's entries and edges (NOTE [node entries in C++])
    and Python's tensor nodes and edges, in document order (each run of Python's written in
    one call). Called after the events: saved values spend what they left of the budget."""
    core = rec.core
    parts: list[bytes] = []
    start = 0
    for mine, run in _runs(nodes, type(None)):
        if mine:  # their saved values spend what is left of the budget (NOTE [saved values])
            text, rec.values.values_budget = core.nodes_json(start, start + len(run),
                                                             rec.values.values_budget)
            parts.append(bytes(text))
        else:
            parts.append(canonical_json(run)[1:-1])
        start += len(run)
    edges: list[bytes] = []
    for mine, run in _runs(rec.edges, range):
        for text in ([core.edges_json(r.start, r.stop) for r in run] if mine
                     else [canonical_json(run)[1:-1]]):
            if text:
                edges.append(text)
    return b"".join((b'{"edges":[', b",".join(edges), b'],"nodes":[', b",".join(parts), b"]}"))


def tensor_reader(rec: Recorder) -> Callable[[str], Any] | None:
    """The run's kept tensors by key, for the analysis (NOTE [dynamics from the recorded numbers]
    in analysis/dynamics/series.py), or None without a tensor file."""
    # the file's own bytes, read in place (the tensors were let go once written: NOTE [each
    # tensor let go once written] in tensorfile.py)
    tf = rec.tensor_file
    if tf is None:
        return None
    # NOTE [the index the writer knows] in tensorfile.py: the header is not parsed again
    return file_reader(tf.data, getattr(tf.tensors, "index", None))


def _add_analysis(doc: dict[str, Any], rec: Recorder) -> None:
    """The document's ``analysis`` (:mod:`gradtrace.analysis`), computed once, here, from the
    document's own parts (:func:`~gradtrace.analysis.run.analyze_parts`); left out when there
    is nothing to say."""
    found = analyze_parts(doc, tensors=tensor_reader(rec), dynamics=rec.steps.on)
    if found is not None:
        doc["analysis"] = found


def build_document(rec: Recorder, *, status: str, error: dict[str, Any] | None = None,
                   message: str | None = None, stdout: str = "", stdout_truncated: bool = False,
                   device: str = "cpu", code: str | None = None, seed: int | None = None,
                   analysis: bool = True) -> dict[str, Any]:
    """The run document as a JSON-able dict without its ``id`` (see the NOTEs above and below).

    With ``analysis`` (the default) the document gets its ``analysis`` here; the sandbox child
    leaves it to the web process, which analyses what it validated (NOTE [one analysis] in
    :mod:`gradtrace.sandbox.outcome`), and ``rec.document()`` computes it when first read
    (NOTE [an id and an analysis on first use] in gradtrace/notebook/run.py).

    NOTE [one document path]
        ``doc["graph"]`` and ``doc["events"]`` are their canonical JSON as the core wrote it
        (:class:`~gradtrace.schema.canonical.CanonicalText`), never dicts and lists: every
        reader takes those bytes as they are (NOTE [capture's one exit] in captured.py). The
        sandbox child and the CLI write them out; ``rec.document()`` reads them as views or
        models on first read; the tests parse them once, at their own edge. Nothing builds
        30,000 dicts only to write them out again, and nothing reads the core's entries back
        a second way.

    NOTE [who assigns the id]
        An id is the schema's (:func:`gradtrace.schema.canonical.canonical_with_id`), never
        capture's. A document written out gets it from whoever serialises it: the web process,
        once it has validated the sandbox child's JSON and set the job's fields; the CLI and
        ``rec.document()``, from the bytes they hash
        (:meth:`~gradtrace.capture.captured.CapturedDocument.canonical_with_id`).
    """
    # NOTE [gc while building documents] in gradtrace/collector.py: building allocates tens of
    # thousands of acyclic dicts (and serialising, a few big buffers)
    with gc_paused(settle=True):
        with torch._C.DisableTorchFunction():
            rec.steps.final()  # NOTE [a leaf's value around each step] in valuesteps.py
            rec.values.begin_document()
            rec.values.encode_held()
            nodes = _nodes(rec)
            events_json = _core_events(rec)
            graph = CanonicalText(_core_graph(rec, nodes))
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "status": status, "error": _error(error),
            "stdout": stdout, "device": device,
            "graph": graph,
            "events": CanonicalText(events_json), "message": message,
            "stdout_truncated": stdout_truncated, "code": code, "seed": seed,
            "passes": [dict(p.doc) for p in rec.passes], "memory": _memory(rec),
            "torch_version": torch.__version__,
        }
        if rec.tangents.steps:  # NOTE [forward-mode AD] in tangents.py
            with torch._C.DisableTorchFunction():
                doc["tangents"] = rec.tangents.document(rec.values, rec.namespace, rec.core.index_of)
            if rec.tangents.more:
                doc["tangents_more"] = rec.tangents.more
        if rec.folded:  # NOTE [torch's own checks are folded] in folded.py
            doc["folded"] = [dict(f) for f in rec.folded]
        if rec.n_recorder_errors:
            doc["recorder_errors"] = {"count": rec.n_recorder_errors, "first": rec.recorder_errors}
        if rec.threads_unrecorded:
            doc["threads_unrecorded"] = rec.threads_unrecorded  # NOTE [other threads' graphs]
        if rec.module_calls:
            doc["modules"] = [{"calls": calls, "path": path, "type": kind}
                              for path, (kind, calls) in rec.module_calls.items()]
            for info in doc["modules"]:
                if rec.module_train_lines.get(info["path"]):
                    info["training_no_grad_lines"] = rec.module_train_lines[info["path"]]
                if len(rec.module_modes.get(info["path"]) or ()) > 1:  # NOTE [a module's modes]
                    info["modes"] = rec.module_modes[info["path"]]
                if rec.dropouts.by_path.get(info["path"]):  # NOTE [functional dropout ignores eval()]
                    info["dropout_in_eval_lines"] = rec.dropouts.by_path[info["path"]]
                if rec.module_frozen.get(info["path"]):
                    info["frozen"] = rec.module_frozen[info["path"]]
                missed = unreached(info["path"], rec.module_params.get(info["path"], []), rec.tensors,
                                   rec.module_calls) if rec.passes else []
                if missed:  # NOTE [frozen parameters] in definitions.py
                    info["unreached"] = missed
        if rec.tensor_budget is not None:  # NOTE [kept tensors] in tensorfile.py
            try:
                rec.tensor_file = attach(rec, doc, rec.tensor_budget, nodes)
            except Exception as e:  # NOTE [the recorder never breaks the snippet]: no file then
                rec.internal_error(e)
                doc["recorder_errors"] = {"count": rec.n_recorder_errors, "first": rec.recorder_errors}
        if analysis:
            _add_analysis(doc, rec)
    return doc
