"""Capture overhead: forward+backward bare vs recorded by gradtrace (+ JSON), one thread.

    .venv/bin/python bench/bench_capture.py [--reps N] [--quick] [--gru-bare]

Cases: a ResNet-18-like CNN, a 6-layer transformer encoder, a GRUCell unrolled 200
steps. Each case builds its model once; every repetition then runs forward+backward either
bare, or inside ``gradtrace.record()`` followed by ``rec.document()`` and ``canonical_json`` (so
serialization is included). Bare and captured repetitions alternate, in the same process, so
machine noise hits both alike. torchviz's ``make_dot`` (graph extraction only, no rendering) is
timed on the transformer when torchviz is installed, against gradtrace's own graph walk; its
graph extraction (walk, names, graph JSON, after the forward as make_dot does it); its graph
capture (what it does while the forward runs, plus the graph's JSON); and its whole capture
overhead (backward hooks and gradient values included). Targets: ratio <= 2 (CNN,
transformer), <= 3 (GRU), capture no slower than make_dot. ``--python`` adds the Python
recorder (no C++ core). A lesson-style training loop (``mlp-adam-50``: an MLP, Adam, 50 steps)
is timed the same way, without a target. ``--gru-bare`` prints only the GRU-200 program of
tests/programs.py recorded without tensors, its document built (``rec.document()`` and its
JSON), against the same program bare: three rounds, process CPU and wall (target <= 2.5x), with
the recording alone and the recording + ``rec.document()`` (no analysis, no JSON) beside it.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
from torch import nn

import gradtrace
from gradtrace.capture.document import _core_graph, _nodes
from gradtrace.capture.gradedits import GradEdits
from gradtrace.capture.recorder import Recorder
from gradtrace.schema import canonical_json
from gradtrace.schema.fast import validate_strict_json


def stdlib_canonical(obj: Any) -> bytes:
    """Canonical JSON the obvious way (json.dumps), what the schema's orjson writer equals."""
    import json

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def graph_json(rec: Recorder) -> bytes:
    """The canonical JSON of the recorded graph alone (nodes and edges, as the document has
    them): the counterpart of torchviz's extraction."""
    with torch._C.DisableTorchFunction():
        rec.values.begin_document()
        return _core_graph(rec, _nodes(rec))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.down(x))


def resnet18_like() -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                               nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def make_cases() -> dict[str, tuple[Callable[[], torch.Tensor], nn.Module]]:
    torch.manual_seed(0)
    cnn = resnet18_like()
    images = torch.randn(2, 3, 64, 64)
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0,
                                       batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    tokens = torch.randn(4, 32, 128)
    cell = nn.GRUCell(16, 32)
    seq = torch.randn(200, 1, 16)

    def cnn_loss() -> torch.Tensor:
        return nn.functional.cross_entropy(cnn(images), torch.tensor([1, 7]))

    def transformer_loss() -> torch.Tensor:
        loss: torch.Tensor = encoder(tokens).pow(2).mean()
        return loss

    def gru_loss() -> torch.Tensor:
        h = torch.zeros(1, 32)
        for t in range(seq.shape[0]):
            h = cell(seq[t], h)
        return h.pow(2).sum()

    return {"resnet18-like": (cnn_loss, cnn), "transformer-6": (transformer_loss, encoder),
            "grucell-200": (gru_loss, cell)}


def training_loop(steps: int = 50) -> Callable[[], None]:
    """A lesson-style snippet, with no target of its own: an MLP trained 50 steps with Adam (library
    modules, top-level ops, 50 backward passes, optimizer steps); ``adam-20``: 20 steps."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 4), torch.randn(32, 1)

    def run() -> None:
        for _ in range(steps):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()

    return run


def timed_training(run: Callable[[], None], native: bool | None = None,
                   max_nodes: int = 50_000) -> tuple[float, int, int]:
    """The training loop recorded, its document and JSON written, as ``timed_capture``. With a
    small ``max_nodes``, recording stops early and the loop runs on unrecorded (NOTE [limits]
    in recorder.py): what a notebook's long loop costs past the limit."""
    gc.collect()  # NOTE [collections between repetitions]
    t0 = CLOCK()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the limit's RuntimeWarning
        with gradtrace.record(native=native, max_nodes=max_nodes) as rec:
            run()
    body = rec._captured().json_without_id()  # capture's one exit, as the sandbox child writes it
    elapsed = CLOCK() - t0
    nodes = len(rec.recorder.nodes)
    del rec
    return elapsed, len(body), nodes


def bare(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> None:
    model.zero_grad(set_to_none=True)
    loss_fn().backward()  # type: ignore[no-untyped-call]


def captured(loss_fn: Callable[[], torch.Tensor], model: nn.Module,
             native: bool | None = None) -> tuple[int, int, Any]:
    """What the sandbox child does: record, then the document's canonical JSON. Returns the
    size, the node count and what to free after the clock stops (NOTE [teardown])."""
    model.zero_grad(set_to_none=True)
    with gradtrace.record(native=native) as rec:
        loss_fn().backward()  # type: ignore[no-untyped-call]
    doc = rec._captured()  # capture's one exit
    body = doc.json_without_id()  # as the sandbox child writes it
    return len(body), len(rec.recorder.nodes), (rec, doc, body)


def timed_in_process(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> tuple[float, float, float]:
    """What a notebook user does: ``with gradtrace.record() as rec`` around the
    forward+backward, then ``rec.document()`` (the validated pydantic RunDocument). Returns
    (whole time, of which ``rec.document()``, then reading its graph and events once)."""
    model.zero_grad(set_to_none=True)
    gc.collect()  # NOTE [collections between repetitions]
    t0 = CLOCK()
    with gradtrace.record() as rec:
        loss_fn().backward()  # type: ignore[no-untyped-call]
    t1 = CLOCK()
    doc = rec.document()
    t2 = CLOCK()
    _ = doc.graph.nodes, doc.events  # NOTE [a document built on first use]: built now
    t3 = CLOCK()
    del doc, rec
    return t2 - t0, t2 - t1, t3 - t2


# NOTE [teardown]: freeing a recorded run (a GRU-200's ~150,000 Python objects) is not timed:
# the sandbox's job child writes the document and ends with os._exit, which frees nothing.


def timed_capture(loss_fn: Callable[[], torch.Tensor], model: nn.Module,
                  native: bool | None = None) -> tuple[float, int, int]:
    gc.collect()  # NOTE [collections between repetitions]
    t0 = CLOCK()
    size, nodes, keep = captured(loss_fn, model, native)
    elapsed = CLOCK() - t0
    del keep
    return elapsed, size, nodes


def names_off_on(loss_fn: Callable[[], torch.Tensor], model: nn.Module,
                 reps: int) -> tuple[list[float], list[float]]:
    """Capture+json without, then with, intermediates' variable names
    (``Recorder.name_results_on``), alternating."""
    off: list[float] = []
    on: list[float] = []
    try:
        for _ in range(reps):
            Recorder.name_results_on = False
            off.append(timed_capture(loss_fn, model)[0])
            Recorder.name_results_on = True
            on.append(timed_capture(loss_fn, model)[0])
    finally:
        Recorder.name_results_on = True
    return off, on


def edits_off_on(capture: Callable[[], float], reps: int) -> tuple[list[float], list[float]]:
    """One capture timed without, then with, the look for gradient edits
    (``GradEdits.enabled``: NOTE [gradient edits] in capture/gradedits.py), alternating."""
    off: list[float] = []
    on: list[float] = []
    try:
        for _ in range(reps):
            GradEdits.enabled = False
            off.append(capture())
            GradEdits.enabled = True
            on.append(capture())
    finally:
        GradEdits.enabled = True
    return off, on


def serialisers(loss_fn: Callable[[], torch.Tensor], model: nn.Module,
                reps: int) -> tuple[list[float], list[float]]:
    """Canonical JSON of one captured document as the web process holds it (the strict
    validator's dicts, NOTE [fast path] in schema/fast.py): ``json.dumps`` against the schema's
    orjson writer, alternating (NOTE [canonical JSON with orjson])."""
    model.zero_grad(set_to_none=True)
    with gradtrace.record() as rec:
        loss_fn().backward()  # type: ignore[no-untyped-call]
    doc = validate_strict_json(rec._captured().canonical_with_id()[1])
    assert doc is not None
    assert stdlib_canonical(doc) == canonical_json(doc)
    t_json: list[float] = []
    t_orjson: list[float] = []
    for _ in range(reps):
        t_json.append(timed(lambda: stdlib_canonical(doc)))
        t_orjson.append(timed(lambda: canonical_json(doc)))
    return t_json, t_orjson


def walk_only(loss_fn: Callable[[], torch.Tensor], native: bool) -> Callable[[], Any]:
    """gradtrace's discovery alone, on one kernel set: every node of a fresh forward with its
    name, output metadata, saved tensors and edges, placed and registered (no hooks) by a
    fresh recorder; the forward itself is not timed."""
    loss = loss_fn()

    def run() -> Any:
        rec = Recorder("<bench>", max_nodes=50_000, max_events=200_000, use_native=native)
        rec.discover([loss.grad_fn], line=None, seq_mark=None, hooks=False)
        rec.remove_hooks()

    return run


def extraction_only(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> Callable[[], Any]:
    """gradtrace doing what make_dot does, after a plain forward: the graph from the loss with
    every node (name, metadata, saved tensors), the parameters named as the snippet reaches
    them, the edges, written as the document's graph JSON. (Lines and module paths need the
    forward-time tap: see the graph capture row.)"""
    loss = loss_fn()
    namespace = {"model": model}

    def run() -> Any:
        rec = Recorder("<bench>", max_nodes=50_000, max_events=200_000)
        rec.namespace = namespace
        rec.discover([loss.grad_fn], line=None, seq_mark=None, hooks=False)
        text = graph_json(rec)
        rec.remove_hooks()  # none were set; this also frees the core's references to rec
        return text

    return run


def forward_bare(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> Any:
    model.zero_grad(set_to_none=True)
    return loss_fn()


def forward_captured(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> Any:
    """What gradtrace does to capture the graph while the forward builds it: the tap on every
    torch call, module paths and source lines, the walk (names, metadata, saved tensors,
    edges), and the graph's JSON as the document has it. No backward hooks, events or values
    of gradients: the counterpart of make_dot, which extracts the graph after the forward."""
    model.zero_grad(set_to_none=True)
    with gradtrace.record() as rec:
        loss = loss_fn()
    return rec, loss, graph_json(rec.recorder)


def extract_only(loss_fn: Callable[[], torch.Tensor], model: nn.Module) -> Callable[[], Any]:
    """torchviz make_dot on a fresh forward (the forward itself is not timed)."""
    from torchviz import make_dot

    params = dict(model.named_parameters())

    def run() -> Any:
        return make_dot(loss, params=params)

    loss = loss_fn()
    return run


def _gru_program() -> str:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from programs import GRU_200

    return str(GRU_200)


def _gru_once(code: str, record: bool) -> tuple[float, float, float, float]:
    """One run of the GRU-200 program (``tests/programs.py``): bare (``exec`` alone), or
    recorded without tensors with its document built and written (``rec.document()``, its
    canonical JSON, the analysis included, as a notebook has it): the issue's "record +
    document". (process CPU, wall, process CPU of the recording alone, process CPU of the
    recording and ``rec.document()`` without the analysis and JSON) seconds."""
    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    compiled = compile(code, "<snippet>", "exec")
    gc.collect()  # NOTE [collections between repetitions]
    c0, w0 = time.process_time(), time.perf_counter()
    if record:
        with gradtrace.record(tensor_budget=None, _filename="<snippet>", _namespace=ns, _fresh=True) as rec:
            exec(compiled, ns)
        c1 = time.process_time()
        doc = rec.document()
        c2 = time.process_time()
        doc.canonical_json()
    else:
        exec(compiled, ns)
        c1 = c2 = time.process_time()
    return time.process_time() - c0, time.perf_counter() - w0, c1 - c0, c2 - c0


def gru_against_bare(rounds: int = 3, runs: int = 5) -> None:
    """GRU-200 record + document (no tensors) against the same program run bare: ``rounds``
    repeats in this process, each the median of ``runs`` alternating runs of both (NOTE
    [clock]: process CPU, where the neighbours' load counts less, and wall)."""
    code = _gru_program()
    for _ in range(2):  # warm-up: allocator, first-use costs
        _gru_once(code, False)
        _gru_once(code, True)
    cpu_ratios: list[float] = []
    wall_ratios: list[float] = []
    doc_ratios: list[float] = []
    print("GRU-200 record + document (no tensors) vs bare, process CPU and wall:")
    for i in range(rounds):
        bare_t = [_gru_once(code, False) for _ in range(runs)]
        rec_t = [_gru_once(code, True) for _ in range(runs)]
        for _ in range(runs):  # interleaved too, so both see the same load
            bare_t.append(_gru_once(code, False))
            rec_t.append(_gru_once(code, True))
        bc, bw = (statistics.median(x[k] for x in bare_t) for k in (0, 1))
        rc, rw, ro, rd = (statistics.median(x[k] for x in rec_t) for k in (0, 1, 2, 3))
        cpu_ratios.append(rc / bc)
        wall_ratios.append(rw / bw)
        print(f"  round {i + 1}: bare {bc * 1e3:.1f} ms CPU / {bw * 1e3:.1f} ms wall; record+document "
              f"{rc * 1e3:.1f} ms CPU / {rw * 1e3:.1f} ms wall; {rc / bc:.2f}x CPU, {rw / bw:.2f}x wall "
              f"(the recording alone {ro * 1e3:.1f} ms CPU, {ro / bc:.2f}x; recording + rec.document() "
              f"without the analysis {rd * 1e3:.1f} ms CPU, {rd / bc:.2f}x)")
        doc_ratios.append(rd / bc)
    print(f"  range: {min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}x CPU, "
          f"{min(wall_ratios):.2f}-{max(wall_ratios):.2f}x wall; recording + rec.document() without "
          f"the analysis {min(doc_ratios):.2f}-{max(doc_ratios):.2f}x CPU (target <= 2.5x)")


CLOCK = time.thread_time
"""NOTE [clock]: CPU time of this thread. With one intra-op thread, the forward, the engine's
CPU backward and the recorder all run on it; other processes competing for the two cores
(the test suites of the rest of the team) then inflate both sides less than wall time does."""


def timed(fn: Callable[[], Any]) -> float:
    """NOTE [collections between repetitions]: a full collection first (not timed), so that
    neither side pays for the garbage the other left (a gen-2 pass over torch's heap costs
    tens of ms and otherwise lands on whichever repetition happens to trigger it)."""
    gc.collect()
    t0 = CLOCK()
    fn()
    return CLOCK() - t0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="3 repetitions (smoke test)")
    ap.add_argument("--case", action="append", help="only these cases (repeatable)")
    ap.add_argument("--python", action="store_true",
                    help="also time the Python recorder (the fallback without the C++ core)")
    ap.add_argument("--gru-bare", action="store_true",
                    help="only GRU-200 record + document against bare: 3 rounds, process CPU and wall")
    args = ap.parse_args()
    reps = 3 if args.quick else args.reps
    torch.set_num_threads(1)
    if args.gru_bare:
        gru_against_bare()
        return
    rows: list[tuple[str, int, float, float, str, float | None, str]] = []
    for name, (loss_fn, model) in make_cases().items():
        if args.case and name not in args.case:
            continue
        for _ in range(2):  # warm-up: allocator, first-use costs
            bare(loss_fn, model)
            timed_capture(loss_fn, model)
        t_bare: list[float] = []
        t_cap: list[float] = []
        size = nodes = 0
        for _ in range(reps):
            t_bare.append(timed(lambda: bare(loss_fn, model)))  # noqa: B023
            elapsed, size, nodes = timed_capture(loss_fn, model)
            t_cap.append(elapsed)
        mb = statistics.median(t_bare)
        mc = statistics.median(t_cap)
        rows.append((f"{name} bare fwd+bwd", reps, mb, pct(t_bare, 0.95), "-", None, ""))
        rows.append((f"{name} capture+json", reps, mc, pct(t_cap, 0.95), "bare", mc / mb,
                     f"{nodes} nodes, {size / 1e6:.2f} MB, {size / max(nodes, 1):.0f} B/node"))
        if name.startswith("gru"):
            t_off, t_on = names_off_on(loss_fn, model, reps)
            mo, mn = statistics.median(t_off), statistics.median(t_on)
            rows.append((f"{name} capture, no var names", reps, mo, pct(t_off, 0.95), "bare", mo / mb,
                         "the recorder before intermediates got their variables (old)"))
            rows.append((f"{name} capture, var names", reps, mn, pct(t_on, 0.95), "old", mn / mo,
                         "NOTE [variables of intermediates]: alternating with the old, same run"))
            t_off, t_on = edits_off_on(lambda: timed_capture(loss_fn, model)[0], reps)  # noqa: B023
            mo, mn = statistics.median(t_off), statistics.median(t_on)
            rows.append((f"{name} capture, no edit look", reps, mo, pct(t_off, 0.95), "bare", mo / mb,
                         "identity and version only (before gradient edits)"))
            rows.append((f"{name} capture, edit look", reps, mn, pct(t_on, 0.95), "no look", mn / mo,
                         "NOTE [gradient edits]: alternating with the above, same run"))
        t_in: list[float] = []
        t_doc: list[float] = []
        t_read: list[float] = []
        for _ in range(reps):
            whole, part, read = timed_in_process(loss_fn, model)
            t_in.append(whole)
            t_doc.append(part)
            t_read.append(whole + read)
        mi = statistics.median(t_in)
        rows.append((f"{name} record+document()", reps, mi, pct(t_in, 0.95), "bare", mi / mb,
                     f"in process, as a notebook; rec.document() alone {statistics.median(t_doc) * 1e3:.1f} ms"))
        mr = statistics.median(t_read)
        rows.append((f"{name} ... + read graph, events", reps, mr, pct(t_read, 0.95), "bare", mr / mb,
                     "the same, then doc.graph and doc.events built (first read)"))
        if args.python:
            t_py = [timed_capture(loss_fn, model, native=False)[0] for _ in range(reps)]
            mp = statistics.median(t_py)
            rows.append((f"{name} capture+json (Python)", reps, mp, pct(t_py, 0.95), "bare", mp / mb,
                         "the fallback without the C++ core"))
        t_json, t_orjson = serialisers(loss_fn, model, reps)
        mj, mo = statistics.median(t_json), statistics.median(t_orjson)
        rows.append((f"{name} json.dumps", reps, mj, pct(t_json, 0.95), "-", None,
                     "the obvious canonical writer"))
        rows.append((f"{name} orjson writer", reps, mo, pct(t_orjson, 0.95), "json.dumps", mo / mj,
                     "schema canonical_json: same bytes (asserted)"))
        if name == "transformer-6":
            try:
                run = extract_only(loss_fn, model)
            except ImportError:
                rows.append(("transformer-6 torchviz make_dot", 0, 0.0, 0.0, "-", None,
                             "torchviz not installed"))
                continue
            t_viz = [timed(run) for _ in range(reps)]
            mv = statistics.median(t_viz)
            rows.append(("transformer-6 torchviz make_dot", reps, mv, pct(t_viz, 0.95), "-", None,
                         "extraction only"))
            rows.append(("transformer-6 capture overhead", reps, mc - mb, 0.0, "make_dot",
                         (mc - mb) / mv, "capture+json minus bare, vs make_dot"))
            t_fb: list[float] = []
            t_fc: list[float] = []
            for _ in range(reps):
                t_fb.append(timed(lambda: forward_bare(loss_fn, model)))  # noqa: B023
                t_fc.append(timed(lambda: forward_captured(loss_fn, model)))  # noqa: B023
            mg = statistics.median(t_fc) - statistics.median(t_fb)
            rows.append(("transformer-6 graph capture", reps, mg, 0.0, "make_dot", mg / mv,
                         "forward under record + graph JSON, minus bare forward (no backward)"))
            extract = extraction_only(loss_fn, model)
            t_ex = [timed(extract) for _ in range(reps)]
            me = statistics.median(t_ex)
            rows.append(("transformer-6 graph extraction", reps, me, pct(t_ex, 0.95), "make_dot",
                         me / mv, "what make_dot does, after the forward: walk, names, graph JSON"))
            for label, nat in (("C++ core", True), ("Python", False)):
                walk = walk_only(loss_fn, nat)
                t_walk = [timed(walk) for _ in range(reps)]
                mw = statistics.median(t_walk)
                rows.append((f"transformer-6 graph discovery ({label})", reps, mw, pct(t_walk, 0.95),
                             "make_dot", mw / mv, "extraction only: names, metadata, saved tensors, edges"))
    if not args.case or "mlp-adam-50" in args.case:
        run = training_loop()
        for _ in range(2):
            run()
            timed_training(run)
        t_bare = []
        t_cap = []
        size = nodes = 0
        for _ in range(reps):
            t_bare.append(timed(run))
            elapsed, size, nodes = timed_training(run)
            t_cap.append(elapsed)
        mb, mc = statistics.median(t_bare), statistics.median(t_cap)
        rows.append(("mlp-adam-50 bare training loop", reps, mb, pct(t_bare, 0.95), "-", None,
                     "lesson-style, no target"))
        rows.append(("mlp-adam-50 capture+json", reps, mc, pct(t_cap, 0.95), "bare", mc / mb,
                     f"{nodes} nodes, {size / 1e6:.2f} MB"))
        t_stop = [timed_training(run, max_nodes=50)[0] for _ in range(reps)]
        ms = statistics.median(t_stop)
        rows.append(("mlp-adam-50 stopped at 50 nodes", reps, ms, pct(t_stop, 0.95), "bare",
                     ms / mb, "record() past its limit: the loop runs on unrecorded"))
        if args.python:
            t_py = [timed_training(run, native=False)[0] for _ in range(reps)]
            mp = statistics.median(t_py)
            rows.append(("mlp-adam-50 capture+json (Python)", reps, mp, pct(t_py, 0.95), "bare",
                         mp / mb, "the fallback without the C++ core"))
    if not args.case or "adam-20" in args.case:
        run20 = training_loop(20)
        for _ in range(2):
            timed_training(run20)
        t_bare20 = [timed(run20) for _ in range(reps)]
        t_off, t_on = edits_off_on(lambda: timed_training(run20)[0], reps)
        mb, mo, mn = statistics.median(t_bare20), statistics.median(t_off), statistics.median(t_on)
        rows.append(("adam-20 bare training loop", reps, mb, pct(t_bare20, 0.95), "-", None, "20 steps"))
        rows.append(("adam-20 capture, no edit look", reps, mo, pct(t_off, 0.95), "bare", mo / mb,
                     "identity and version only (before gradient edits)"))
        rows.append(("adam-20 capture, edit look", reps, mn, pct(t_on, 0.95), "no look", mn / mo,
                     "NOTE [gradient edits]: alternating with the above, same run"))
    if not args.case or "grucell-200" in args.case:
        gru_against_bare()
    print(f"(thread CPU time, torch threads = {torch.get_num_threads()}, torch {torch.__version__})")
    print(f"{'case':36} {'n':>3} {'median ms':>10} {'p95 ms':>9} {'baseline':>9} {'ratio':>6}  note")
    for case, n, med, p95, base, ratio, note in rows:
        r = f"{ratio:6.2f}" if ratio is not None else "     -"
        print(f"{case:36} {n:>3} {med * 1e3:10.2f} {p95 * 1e3:9.2f} {base:>9} {r}  {note}")


if __name__ == "__main__":
    main()
