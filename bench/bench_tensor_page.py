"""The inspector's tensors in headless Chromium, on a real served run (uvicorn, the sandbox).

1. Fetching and drawing a 256×256 heatmap (goal ≤ 100 ms): a run whose TanhBackward0 output is
   256×256 float32; each sample opens the run's page (``/r/{id}``) in a fresh browser context
   (no cache), waits until the graph's first frame is drawn and the page is next idle (a
   person clicks a node after seeing it; the index asked for in idle time may still be on its
   way, and is not waited for), selects the node and reads the time from the inspector asking for the
   tensor (one Range request, after the index) to the heatmap and histogram drawn (the item's
   ``data-ms``, frontend/src/ui/tensors.js), split into fetch (index and bytes), decode and
   draw (its ``data-fetch-ms``, ``data-decode-ms``, ``data-draw-ms``); the rest is the page's
   main thread busy with the selection. Also selected the moment the first frame is drawn,
   before the index has arrived (the look reads the tensor by its key: one request, not the
   index and then its Range). Where the service does not keep the sandbox's tensor
   file, the run is recorded here and stored with its file through the store's ``put_run``, as
   the run path does; the table says which. The same, read from a saved file. And the way a
   person selects it with the mouse: the pointer comes to rest on the node, ``DWELL_MS`` later
   it clicks (NOTE [fetched on hover] in frontend/src/ui/tensors.js: the tensors are asked
   for while it rests); timed from the inspector asking (after the click) to drawn, as above
   (its "fetch" column is then the prefetch's own, begun before the click).
2. The page's first frame, unchanged: document → first frame for a synthetic 3,000-node graph,
   this build against another build of ``frontend/dist`` (``--baseline-dist``, e.g. main's), in
   two tabs of one browser, interleaved. The first frame also makes no request to the tensor
   file (tests/browser/test_tensor_service.py checks that).

3. With ``--baseline-src DIR`` (another checkout, its ``frontend/dist`` built and
   ``backend/gradtrace/frontend`` linking to its ``frontend``), the served cases of 1 also run
   on a second service started from that checkout's ``backend`` (``PYTHONPATH``), interleaved
   with this build's, sample by sample: a before/after on the same machine load.

Run: ``python bench/bench_tensor_page.py [--baseline-dist DIR] [--baseline-src DIR] [--program
transformer] [--runs N]`` (needs ``frontend/dist``). ``--program transformer`` selects an attention
weight of a 2-layer encoder (d_model 256) instead of the tanh program's node.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from pathlib import Path
from typing import Any

from common import ROOT, Row, fmt_s, print_table  # first: it puts tests/ on the path

# isort: split
from bench_frontend import first_frame_seconds, open_page
from browser.synth import synthetic_document
from conftest import CHROMIUM_ARGS, chromium_path, running_server
from pageguard import wait_until

HEATMAP = """import torch
torch.manual_seed(0)
w = torch.randn(256, 256, requires_grad=True)
(w.tanh() * 2).sum().backward()
"""
TRANSFORMER = """import torch
from torch import nn
torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, 512, batch_first=True), 2)
x = torch.randn(2, 16, 256)
enc(x).sum().backward()
"""
PROGRAM = ("", "")  # main() sets it from --program
PROGRAMS = {"tanh": (HEATMAP, "TanhBackward0"), "transformer": (TRANSFORMER, "enc.layers.0.self_attn.out_proj.weight")}
"""``--program``: its code and the node selected. ``transformer``: an attention weight (a leaf
of 256×256) whose inspector shows four such tensors (the gradient flowing in, ``.grad``, the
value at the start and at the end), the first of them timed."""
FIRST = "#inspector [data-gt=tensor][data-key]:not([data-key=''])"
"""The inspector's first tensor with bytes in the file: the one a person looks at first."""

SELECT_AND_TIME = """async (name) => {
  await new Promise((r) => (window.requestIdleCallback || setTimeout)(r));  // the page idle once
  const app = window.gradtrace.app, nodes = app.index.nodes;
  const i = nodes.findIndex((n) => n.name === name);
  app.viewer.selectNode(app.scene.view.vnodes.findIndex((n) => n.refs && n.refs.length === 1 && n.refs[0] === i));
  for (;;) {
    const box = document.querySelector("FIRST");
    const d = box && box.dataset;
    if (d && d.ready) return [d.ready, ...['ms', 'fetchMs', 'decodeMs', 'drawMs'].map((k) => Number(d[k]))];
    await new Promise((r) => requestAnimationFrame(r));
  }
}""".replace("FIRST", FIRST)
SELECT_EARLY = SELECT_AND_TIME.replace(
    "await new Promise((r) => (window.requestIdleCallback || setTimeout)(r));  // the page idle once", "")
"""The same, selected the moment the first frame is drawn: the index (asked for in idle time)
is not in yet, so the look cannot place its Range request (NOTE [one round trip for the first
look] in backend/gradtrace/api/tensor_keys.py)."""
POINT_AT = """async (name) => {
  await new Promise((r) => (window.requestIdleCallback || setTimeout)(r));  // the page idle once
  const app = window.gradtrace.app, c = app.canvas, s = app.scene, nodes = app.index.nodes;
  const i = nodes.findIndex((n) => n.name === name);
  const v = s.view.vnodes.findIndex((n) => n.refs && n.refs.length === 1 && n.refs[0] === i);
  c.centerOn(v);
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const b = c.overlay.getBoundingClientRect();
  return [b.left + (s.x[v] - c.cam.x) * c.cam.k, b.top + (s.y[v] - c.cam.y) * c.cam.k];
}"""
WAIT_DRAWN = """async () => {
  for (;;) {
    const box = document.querySelector("FIRST");
    const d = box && box.dataset;
    if (d && d.ready) return [d.ready, ...['ms', 'fetchMs', 'decodeMs', 'drawMs'].map((k) => Number(d[k]))];
    await new Promise((r) => requestAnimationFrame(r));
  }
}""".replace("FIRST", FIRST)
DWELL_MS = 100
"""From the pointer coming to rest on the node to the click: a person checks what they point
at before clicking (a few hundred ms is usual); 100 ms is a quick one."""
PARTS = ("select → drawn", "fetch", "decode", "draw")
Split = dict[str, list[float]]


def sample(page: Any, script: str, out: Split, node: str | None = None) -> None:
    ready, *ms = page.evaluate(script, node)
    if ready != "1":
        raise SystemExit(f"the heatmap was not drawn: {ready}")
    for part, x in zip(PARTS, ms, strict=True):
        out.setdefault(part, []).append(x / 1000)


def heatmap_samples(browser: Any, url: str, run_id: str, runs: int, *, pointed: bool = False,
                    early: bool = False) -> Split:
    """``pointed``: selected with the mouse (rest on the node ``DWELL_MS``, click), else at once;
    ``early``: at the first frame, not once the page is next idle."""
    out: Split = {}
    for _ in range(runs):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(f"{url}/r/{run_id}")
        wait_until(page, "window.gradtrace && window.gradtrace.app.scene && document.body.dataset.ready")
        if pointed:
            x, y = page.evaluate(POINT_AT, PROGRAM[1])
            page.mouse.move(x - 3, y)
            page.mouse.move(x, y)
            page.wait_for_timeout(DWELL_MS)
            page.mouse.click(x, y)
            sample(page, WAIT_DRAWN, out)
        else:
            sample(page, SELECT_EARLY if early else SELECT_AND_TIME, out, PROGRAM[1])
        context.close()
    return out


def print_split(title: str, rows: dict[str, Split]) -> None:
    """``case | n | median and p90 of each part`` as a Markdown table."""
    def p90(xs: list[float]) -> float:
        return sorted(xs)[min(len(xs) - 1, round(0.9 * (len(xs) - 1)))]

    print(f"\n### {title}\n")
    print("| case | n | " + " | ".join(f"{part} median / p90" for part in PARTS) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in PARTS) + " |")
    for case, split in rows.items():
        cells = [f"{fmt_s(statistics.median(split[p]))} / {fmt_s(p90(split[p]))}" for p in PARTS]
        print(f"| {case} | {len(split[PARTS[0]])} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


LIMITS = {"GRADTRACE_TIMEOUT_S": "120", "GRADTRACE_CPU_S": "120"}


def heatmap_run(server: Any) -> tuple[str, str]:
    """The heatmap program's run on ``server`` and how it got there."""
    import httpx

    doc = httpx.post(f"{server.url}/api/runs", json={"code": PROGRAM[0]}, timeout=300).json()
    served = bool(doc.get("tensors")) and httpx.get(f"{server.url}/api/runs/{doc['id']}/tensors").status_code == 200
    if served:
        return doc["id"], "run by the service"
    return stored_run(server), "recorded here, stored with put_run as the run path does"


def stored_run(server: Any) -> str:
    """The program recorded in process, its document and tensor file stored on the server's
    database in the one ``put_run`` call the run path makes (tests/api/tensor_runs.py): a real
    served run where the service does not store the sandbox's file itself."""
    from api.tensor_runs import server_store
    from gradtrace.capture import record
    from gradtrace.storage.codec import encode

    namespace: dict[str, Any] = {}
    with record() as rec:
        exec(compile(PROGRAM[0], "<snippet>", "exec"), namespace)
    doc = rec.document()
    body = doc.as_json_dict()
    body["code"] = PROGRAM[0]
    encoded = encode(body)
    with server_store(server) as store:
        store.put_run(encoded, doc.tensor_bytes())
    return encoded.doc_id


def saved_file_samples(browser: Any, runs: int) -> Split:
    """The same program recorded in process and saved as HTML (its tensors embedded), each
    sample in a fresh offline context: decoding and drawing without the network."""
    import tempfile

    from gradtrace.capture import record

    namespace: dict[str, Any] = {}
    with record() as rec:
        exec(compile(PROGRAM[0], "<bench>", "exec"), namespace)
    out: Split = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(rec.document().save_html(f"{tmp}/heatmap.html"))
        for _ in range(runs):
            context = browser.new_context(viewport={"width": 1280, "height": 800}, offline=True)
            page = context.new_page()
            page.goto(path.as_uri())
            wait_until(page, "document.getElementById('gradtrace').dataset.ready === '1'")  # the file's policy: no eval
            shadow = "document.getElementById('gradtrace').shadowRoot.querySelector(\"#inspector"
            script = SELECT_AND_TIME.replace("window.gradtrace.app", "window.gradtrace.viewer").replace(
                'document.querySelector("#inspector', shadow)
            sample(page, script, out, PROGRAM[1])
            context.close()
    return out


def main() -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-dist", type=Path, help="another build of frontend/dist for the first frame")
    parser.add_argument("--baseline-src", type=Path, help="another checkout: its service and page, served cases only")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--program", choices=sorted(PROGRAMS), default="tanh")
    parser.add_argument("--no-saved-file", action="store_true", help="leave out the saved file's case")
    args = parser.parse_args()
    global PROGRAM
    PROGRAM = PROGRAMS[args.program]
    if not (ROOT / "frontend" / "dist" / "app.js").exists():
        print("frontend/dist is not built: run `make frontend` first", file=sys.stderr)
        return 1
    with running_server(LIMITS) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        pages = [("this build", open_page(browser, server.url))]
        if args.baseline_dist:
            pages.insert(0, ("baseline build", open_page(browser, server.url, args.baseline_dist)))
        synth = synthetic_document(3000)
        samples_by: dict[str, list[float]] = {name: [] for name, _ in pages}
        for _ in range(5):  # interleaved: both builds see the same machine load
            for name, page in pages:
                samples_by[name] += first_frame_seconds(page, synth, 1)
        print_table("Playground: document → first frame, 3,000 nodes", [Row(name, s) for name, s in samples_by.items()])
        builds = [("this build", server)]
        with contextlib.ExitStack() as stack:
            if args.baseline_src:
                env = {**LIMITS, "PYTHONPATH": str(args.baseline_src.resolve() / "backend")}
                builds.append(("baseline", stack.enter_context(running_server(env))))
            cases: dict[str, Split] = {}
            runs = []
            for build, srv in builds:
                run_id, how = heatmap_run(srv)
                runs.append((srv, run_id))
                cases[f"{build}: served, selected at once ({how})"] = {}
                cases[f"{build}: served, selected at the first frame, before the index"] = {}
                cases[f"{build}: served, pointed at {DWELL_MS} ms, then clicked"] = {}
            names = list(cases)
            ways = ({}, {"early": True}, {"pointed": True})
            for _ in range(args.runs):  # interleaved: every case sees the same machine load
                for at, (srv, run_id) in enumerate(runs):
                    for k, way in enumerate(ways):
                        split = cases[names[len(ways) * at + k]]
                        for part, xs in heatmap_samples(browser, srv.url, run_id, 1, **way).items():
                            split.setdefault(part, []).extend(xs)
        if not args.no_saved_file:
            cases["saved file (its embedded tensors, no network)"] = saved_file_samples(browser, args.runs)
        title = f"Inspector ({args.program}): select → a 256x256 float32 heatmap and histogram drawn (goal ≤ 100 ms)"
        print_split(title, cases)
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
