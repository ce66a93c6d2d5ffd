"""The document path: the in-process read path, the widget's bytes and the share page's bytes.

    .venv/bin/python bench/bench_documents.py [--reps N] [--quick]

1. The in-process read path on the three real programs (``tests/programs.py``: GRU-200, the
   20-step Adam loop, transformer-6), one thread, thread CPU time (NOTE [clock] in
   bench_capture.py): the program bare; inside ``gradtrace.record()`` plus ``rec.document()``;
   and then reading every node, edge and event and every field of each (``doc.graph.nodes``,
   ``doc.graph.edges``, ``doc.events``: what builds their models). Target (issue 21): GRU-200
   <= 2.5x the bare run. Two rows say where the reading goes: ``orjson.loads`` of the graph's
   and events' bytes alone (the floor of any view of them as Python objects) and pydantic's
   validation of those bytes (what the first read does).
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
from gradtrace.schema import Event, Graph
from programs import ADAM_20, GRU_200, TRANSFORMER_6

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
    """Every node, edge and event of ``doc`` and every field of each."""
    n = 0
    for items in (doc.graph.nodes, doc.graph.edges, doc.events):
        for item in items:
            for field in type(item).model_fields:
                getattr(item, field)
                n += 1
    return n


def in_process(name: str, reps: int) -> list[Row]:
    code = compile(PROGRAMS[name], f"<{name}>", "exec")
    for _ in range(2):  # warm-up: first-use costs
        bare(name, code)
        read_everything(recorded(name, code).document())
    t_bare: list[float] = []
    t_doc: list[float] = []
    t_read: list[float] = []
    t_parse: list[float] = []
    t_again: list[float] = []
    t_validate: list[float] = []
    for _ in range(reps):
        t_bare.append(timed(lambda: bare(name, code)))
        gc.collect()
        t0 = CLOCK()
        rec = recorded(name, code)
        doc = rec.document()
        t1 = CLOCK()
        read_everything(doc)
        t2 = CLOCK()
        read_everything(doc)
        t_again.append(CLOCK() - t2)
        t_doc.append(t1 - t0)
        t_read.append(t2 - t0)
        parts = rec.document_parts()
        graph, events = bytes(parts["graph"]), bytes(parts["events"])
        del doc, rec, parts
        t_parse.append(timed(lambda: (orjson.loads(graph), orjson.loads(events))))  # noqa: B023
        t_validate.append(timed(lambda: _models(graph, events)))  # noqa: B023
    mb = statistics.median(t_bare)
    return [Row(f"{name}: bare run", t_bare),
            Row(f"{name}: record() + rec.document()", t_doc, "bare", mb),
            Row(f"{name}: ... + read every node, edge, event and field", t_read, "bare", mb),
            Row(f"{name}: (the same read again, models built: the loop alone)", t_again, "bare", mb),
            Row(f"{name}: (orjson.loads of graph + events alone)", t_parse, "bare", mb),
            Row(f"{name}: (pydantic models of graph + events alone, as the first read)", t_validate, "bare", mb)]


def _models(graph: bytes, events: bytes) -> Any:
    """What the first read of a ``rec.document()`` does (NOTE [a document built on first use])."""
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
    blob = encode_validated(rec.document_dict()).blob

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
    args = ap.parse_args()
    reps = 3 if args.quick else args.reps
    torch.set_num_threads(1)
    rows: list[Row] = []
    for name in PROGRAMS:
        rows += in_process(name, reps)
    print_table(f"In-process read path (thread CPU time, 1 torch thread, torch {torch.__version__})", rows)
    print_table("Widget bytes of rec.document()", widget_bytes(reps))
    print_table("Share page bytes", share_page(reps))


if __name__ == "__main__":
    main()
