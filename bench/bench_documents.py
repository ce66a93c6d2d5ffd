"""The document path: the in-process read path, the widget's bytes and the share page's bytes.

    .venv/bin/python bench/bench_documents.py [--reps N] [--quick]

1. The in-process read path on the three real programs (``tests/programs.py``: GRU-200, the
   20-step Adam loop, transformer-6), one thread, thread CPU time (NOTE [clock] in
   bench_capture.py): the program bare; inside ``gradtrace.record()`` alone; plus
   ``rec.document()``; and then reading every node, edge and event and every field of each
   (``doc.graph.nodes``, ``doc.graph.edges``, ``doc.events``: read-only views of their JSON,
   NOTE [views of the document's JSON] in gradtrace/schema/views.py); and then ``doc.id`` and
   ``doc.analysis`` (NOTE [an id and an analysis on first use] in gradtrace/notebook/run.py).
   Target: GRU-200 <= 2.5x the bare run. The old path runs in the same repetitions
   (the analysis and id at once, pydantic models on first read). Three rows say where the
   reading goes: the read loop alone, ``orjson.loads`` of the graph's and events' bytes alone
   (the floor of any view of them as Python objects) and pydantic's validation of those
   bytes (what the old first read did).
2. ``rec.document()`` of GRU-200 to the widget's compressed bytes: the old way (the document
   as a dict: its canonical JSON hashed again and its graph and events parsed) against the
   bytes it was hashed from (NOTE [one document path] in capture/document.py).
3. ``/s/{id}``: the page's script-safe document JSON from a stored GRU-200 document, old
   (decompress, parse, normalise, write again, escape) against new (decompress, escape the
   bytes: NOTE [stored bytes served as they are] in storage/codec.py). Both are asserted to
   give the same page text.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from common import ROOT, Row, print_table

sys.path.insert(0, str(ROOT / "tests"))

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

import orjson
from pydantic import TypeAdapter

import gradtrace
from gradtrace.collector import gc_paused
from gradtrace.notebook.run import NotebookRunDocument
from gradtrace.schema import Event, Graph
from gradtrace.schema.canonical import canonical_with_id
from programs import ADAM_20, GRU_200, TRANSFORMER_6
from rundoc import captured_of, record_doc

_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])

CLOCK = time.thread_time
PROGRAMS = {"gru-200": GRU_200, "adam-20": ADAM_20, "transformer-6": TRANSFORMER_6}


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()  # NOTE [collections between repetitions] in bench_capture.py
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


def bare(name: str, code: Any) -> None:
    torch.manual_seed(0)
    exec(code, {"__name__": "__main__"})


def recorded(name: str, code: Any) -> gradtrace.record:
    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    with gradtrace.record(_filename=f"<{name}>", _namespace=ns, _fresh=True) as rec:
        exec(code, ns)
    return rec


def read_everything(doc: Any) -> int:
    """Every node, edge and event of ``doc`` and every field of each (a view declares its
    model's ``model_fields``: NOTE [views of the document's JSON] in gradtrace/schema/views.py)."""
    n = 0
    for items in (doc.graph.nodes, doc.graph.edges, doc.events):
        for item in items:
            for field in type(item).model_fields:
                getattr(item, field)
                n += 1
    return n


def old_document(rec: gradtrace.record) -> NotebookRunDocument:
    """``rec.document()`` as it was: the analysis and the id computed at once, and the graph
    and events validated as pydantic models when first read."""
    doc = dict(captured_of(rec).fields)
    doc["id"], body = canonical_with_id(doc)
    with gc_paused(settle=True):
        return NotebookRunDocument.from_parts(doc, body)


def in_process(name: str, reps: int) -> list[Row]:
    code = compile(PROGRAMS[name], f"<{name}>", "exec")
    for _ in range(2):  # warm-up: first-use costs
        bare(name, code)
        read_everything(recorded(name, code).document())
        read_everything(old_document(recorded(name, code)).validated())
    t: dict[str, list[float]] = {k: [] for k in ("bare", "rec", "doc", "read", "late", "again", "old_doc",
                                                 "old_read", "parse", "validate")}
    for _ in range(reps):
        t["bare"].append(timed(lambda: bare(name, code)))
        gc.collect()
        t0 = CLOCK()
        rec = recorded(name, code)
        t1 = CLOCK()
        doc = rec.document()
        t2 = CLOCK()
        read_everything(doc)
        t3 = CLOCK()
        _ = doc.id, doc.analysis
        t4 = CLOCK()
        read_everything(doc)
        t["again"].append(CLOCK() - t4)
        t["rec"].append(t1 - t0)
        t["doc"].append(t2 - t0)
        t["read"].append(t3 - t0)
        t["late"].append(t4 - t0)
        parts = captured_of(rec)
        graph, events = parts.graph, parts.events
        del doc, rec, parts
        gc.collect()
        t0 = CLOCK()
        old = old_document(recorded(name, code))
        t1 = CLOCK()
        read_everything(old.validated())
        t["old_doc"].append(t1 - t0)
        t["old_read"].append(CLOCK() - t0)
        del old
        t["parse"].append(timed(lambda: _parsed(graph, events)))  # noqa: B023
        t["validate"].append(timed(lambda: _models(graph, events)))  # noqa: B023
    mb = statistics.median(t["bare"])
    mo = statistics.median(t["old_read"])
    rows = [("bare run", "bare", ""),
            ("record() alone", "rec", "bare"),
            ("record() + rec.document()", "doc", "bare"),
            ("... + read every node, edge, event and field (views)", "read", "bare"),
            ("... + doc.id and doc.analysis (computed on first read)", "late", "bare"),
            ("old: record() + rec.document() (analysis and id at once)", "old_doc", "bare"),
            ("old: ... + read every node, edge, event and field (models)", "old_read", "bare"),
            ("(the same read again over the views: the loop alone)", "again", "bare"),
            ("(orjson.loads of graph + events alone)", "parse", "bare"),
            ("(pydantic models of graph + events alone, the old first read)", "validate", "bare")]
    out = [Row(f"{name}: {label}", t[key], base, mb if base else None) for label, key, base in rows]
    out.append(Row(f"{name}: new read path (views) against the old (models)", t["read"], "old", mo))
    return out


def _parsed(graph: bytes, events: bytes) -> Any:
    """What the first read of a ``rec.document()`` parses (NOTE [a document built on first use])."""
    with gc_paused(settle=True):
        return orjson.loads(graph), orjson.loads(events)


def _models(graph: bytes, events: bytes) -> Any:
    """What the old first read of a ``rec.document()`` validated."""
    with gc_paused(settle=True):
        return Graph.model_validate_json(graph), _EVENTS.validate_json(events)


def widget_bytes(reps: int) -> list[Row]:
    from gradtrace.notebook.documents import as_document, compressed, shown_document

    code = compile(GRU_200, "<gru-200>", "exec")
    rec = recorded("gru-200", code)
    old_t: list[float] = []
    new_t: list[float] = []
    for _ in range(reps):
        doc = rec.document()
        old_t.append(timed(lambda: compressed(as_document(doc))))  # noqa: B023
        doc = rec.document()
        new_t.append(timed(lambda: shown_document(doc).compressed()))  # noqa: B023
    doc = rec.document()
    assert gzip.decompress(shown_document(doc).compressed()) == gzip.decompress(compressed(as_document(doc)))
    return [Row("gru-200: rec.document() → widget bytes, old (hash + parse again)", old_t),
            Row("gru-200: rec.document() → widget bytes, new (the bytes hashed)", new_t, "old",
                statistics.median(old_t))]


def share_page(reps: int) -> list[Row]:
    from gradtrace.api.pages import script_safe, script_safe_json
    from gradtrace.storage.codec import current_json, encode_validated, load

    rec = recorded("gru-200", compile(GRU_200, "<gru-200>", "exec"))
    blob = encode_validated(record_doc(rec)).blob

    def old() -> str:
        return str(script_safe_json(load(blob)))

    def new() -> str:
        return str(script_safe(current_json(blob)))

    assert old() == new()
    old_t = [timed(old) for _ in range(reps)]
    new_t = [timed(new) for _ in range(reps)]
    return [Row(f"/s/{{id}} page bytes of gru-200 ({blob.size / 1e6:.1f} MB), old (parse, normalise, write)", old_t),
            Row("/s/{id} page bytes of gru-200, new (stored bytes escaped)", new_t, "old", statistics.median(old_t))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="3 repetitions (smoke test)")
    ap.add_argument("--only", choices=sorted(PROGRAMS), help="the in-process read path of one program, nothing else")
    args = ap.parse_args()
    reps = 3 if args.quick else args.reps
    torch.set_num_threads(1)
    rows: list[Row] = []
    for name in [args.only] if args.only else PROGRAMS:
        rows += in_process(name, reps)
    print_table(f"In-process read path (thread CPU time, 1 torch thread, torch {torch.__version__})", rows)
    if args.only:
        return
    print_table("Widget bytes of rec.document()", widget_bytes(reps))
    print_table("Share page bytes", share_page(reps))


if __name__ == "__main__":
    main()
