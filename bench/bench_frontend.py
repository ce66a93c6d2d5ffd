"""Front-end speed in headless Chromium, against its goals and baselines (each in the tables).

1. From receiving a run document (JSON text) to the first drawn frame, for synthetic
   autograd-shaped graphs of 500, 3,000 and 20,000 nodes (goals ≤ 0.3 s, ≤ 1.0 s, ≤ 1 s).
   Baseline, same graph, same run: Graphviz ``dot -Tsvg`` (what torchviz hands the graph to).
2. Frame time while stepping through a 5,000-node graph drawn unfolded (goal ≤ 16 ms), whole
   graph in view and at Fit (the active part at a legible zoom, labels placed without overlap).
   Measured as the synchronous JavaScript time of one redraw per step.
3. GRU-200 end to end: from pressing Run to the drawn graph, through the real service.
   Baseline: ``dot -Tsvg`` on the same graph (torchviz plus Graphviz takes > 300 s on it).

Run: ``python bench/bench_frontend.py`` (needs ``frontend/dist``: ``make frontend``).
Graphviz is optional: without ``dot`` the baseline column says so.

4. Revealing a node three modules deep (search, node list): one layout per opened fold, as
   before graph/reveal.js, against the folds opened on the view and one layout, same run.
5. GRU-200 redrawn at the overview level of the semantic zoom (goal ≤ 16 ms median).

``--stepping-only`` runs part 2 alone; ``--views-only`` parts 4 and 5.
``--baseline-dist DIR`` also measures part 2 with another
build of the page (``frontend/dist`` of an earlier commit, copied to DIR) in a second tab of the
same browser, interleaved with this build, so a change to the renderer is compared in one run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import ROOT, Row, print_table  # first: it puts tests/ on the path

# isort: split
from browser.synth import synthetic_document
from conftest import CHROMIUM_ARGS, chromium_path, running_server

DOT_CAP_S = 60.0
GRU_200 = """import torch
from torch import nn

torch.manual_seed(0)
cell = nn.GRUCell(16, 32)
xs = torch.randn(200, 1, 16)
h = torch.zeros(1, 32)
for t in range(200):
    h = cell(xs[t], h)
loss = h.pow(2).sum()
loss.backward()
print(loss.item())
"""


def to_dot(doc: dict[str, Any]) -> str:
    """The graph as torchviz would hand it to Graphviz: one box per node, one arrow per edge."""
    lines = ["digraph g {", '  node [shape=box, style=filled, fontname="monospace", fontsize=10];']
    for n in doc["graph"]["nodes"]:
        label = f'{n.get("name") or n["kind"]}\\n{n.get("shape")}'
        lines.append(f'  "{n["id"]}" [label="{label}"];')
    lines += [f'  "{e["source"]}" -> "{e["target"]}";' for e in doc["graph"]["edges"]]
    return "\n".join([*lines, "}"]) + "\n"


def dot_seconds(doc: dict[str, Any], runs: int) -> tuple[list[float], str]:
    """Wall time of ``dot -Tsvg`` on the document's graph (capped), or why it was not run."""
    dot = shutil.which("dot")
    if dot is None:
        return [], "dot not installed"
    samples: list[float] = []
    with tempfile.NamedTemporaryFile("w", suffix=".dot") as f:
        f.write(to_dot(doc))
        f.flush()
        for _ in range(runs):
            t0 = time.perf_counter()
            try:
                subprocess.run([dot, "-Tsvg", "-o", "/dev/null", f.name], check=True,
                               timeout=DOT_CAP_S, capture_output=True)
            except subprocess.TimeoutExpired:
                return [DOT_CAP_S], f"dot -Tsvg (stopped at the {DOT_CAP_S:.0f} s cap)"
            except subprocess.CalledProcessError as exc:
                return [], f"dot failed: {exc.stderr.decode(errors='replace')[:80]}"
            samples.append(time.perf_counter() - t0)
    return samples, "dot -Tsvg, same graph"


def first_frame_seconds(page: Any, doc: dict[str, Any], runs: int) -> list[float]:
    text = json.dumps(doc)
    out = []
    for _ in range(runs):
        ms = page.evaluate("""async (text) => {
            const t0 = performance.now();
            await window.gradtrace.loadDocument(JSON.parse(text));
            return performance.now() - t0; }""", text)
        out.append(ms / 1000)
    return out


def stepping_frame_seconds(page: Any, steps: int, fit: bool) -> list[float]:
    ms = page.evaluate("""async ([steps, fit]) => {
        const app = window.gradtrace.app, c = app.canvas;
        if (fit) c.fit({ whole: true }); else c.fit();
        const out = [];
        const start = Math.max(0, Math.floor(app.player.N / 2) - steps / 2);
        for (let i = 0; i < steps; i++) {
            app.player.go(start + i, { animate: true });
            const t0 = performance.now();
            c.drawNow();
            out.push(performance.now() - t0);
            await new Promise((r) => requestAnimationFrame(r));
        }
        return out; }""", [steps, fit])
    return [m / 1000 for m in ms]


def gru_end_to_end(page: Any, runs: int) -> tuple[list[float], list[float], dict[str, Any]]:
    """Seconds from clicking Run to the drawn graph, and the part spent waiting for the server."""
    page.evaluate("(code) => window.gradtrace.app.editor.setCode(code)", GRU_200)
    total, server = [], []
    doc: dict[str, Any] = {}
    for _ in range(runs):
        before = page.evaluate("Number(document.body.dataset.ready || 0)")
        page.evaluate("""() => { window.__fetchMs = null; const orig = window.fetch;
            window.fetch = async (...a) => { const t0 = performance.now(); const r = await orig(...a);
                const body = await r.clone().arrayBuffer(); window.__fetchMs = performance.now() - t0;
                window.fetch = orig; return r; }; }""")
        t0 = time.perf_counter()
        page.get_by_role("button", name=re.compile(r"^Run\b")).click()
        page.wait_for_function(f"Number(document.body.dataset.ready || 0) > {before}", timeout=180_000)
        total.append(time.perf_counter() - t0)
        server.append(page.evaluate("window.__fetchMs") / 1000)
        doc = page.evaluate("window.gradtrace.app.doc")
    return total, server, doc


def open_page(browser: Any, url: str, dist: Path | None = None) -> Any:
    """A playground tab; with ``dist``, its bundle (``/dist/...``) comes from that folder."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    if dist is not None:
        def serve(route: Any) -> None:
            name = route.request.url.split("/dist/", 1)[1].split("?", 1)[0]
            path = dist / name
            if not path.is_file():
                route.fulfill(status=404, body="")
                return
            ctype = "text/javascript" if name.endswith(".js") else "text/css" if name.endswith(".css") else "text/plain"
            route.fulfill(status=200, body=path.read_bytes(), headers={"content-type": ctype})
        page.route("**/dist/**", serve)
    page.goto(url + "/")
    page.wait_for_function("window.gradtrace !== undefined")
    first_frame_seconds(page, synthetic_document(200), 2)  # warm up the JIT and the worker
    return page


def stepping_rows(pages: list[tuple[str, Any]], rounds: int = 2) -> list[Row]:
    """Part 2 for each build: the same graphs and steps; with two builds, their runs of 200
    steps alternate (``rounds`` each), so that the machine's noise falls on both alike."""
    rows = []
    # Unfolded: nothing in these graphs repeats (graph/groups.js finds no loop), so every
    # node is drawn: 5,000 boxes (transformer shape), or more with per-use proxies (RNN shape).
    for shape in ("transformer", "rnn"):
        what = ""
        for _, page in pages:
            first_frame_seconds(page, synthetic_document(5000, shape), 1)
            drawn = page.evaluate("(a => [a.scene.view.vnodes.length, a.viewer.levels.length])(window.gradtrace.app)")
            assert drawn[1] == 0, f"the {shape} graph was folded"
            what = f"5,000 nodes ({shape}, {drawn[0]:,} boxes drawn, unfolded)"
        for zoom, fit in (("whole graph in view", True), ("reading zoom", False)):
            samples: dict[str, list[float]] = {build: [] for build, _ in pages}
            for _ in range(rounds if len(pages) > 1 else 1):
                for build, page in pages:
                    samples[build] += stepping_frame_seconds(page, 200, fit)
            rows += [Row(f"{build}redraw per step, {what}, {zoom}", samples[build],
                         baseline="goal 16 ms (60 fps)", baseline_median_s=0.016) for build, _ in pages]
    return rows


def nested_document(n_nodes: int) -> dict[str, Any]:
    """The synthetic transformer with its nodes three modules deep (``enc.layers.N.attn|ff``)."""
    doc = synthetic_document(n_nodes, modules=True)
    for i, node in enumerate(doc["graph"]["nodes"]):
        if node.get("module"):
            node["module"] = f"enc.layers.{node['module'].split('.')[1]}.{'attn' if i % 40 < 20 else 'ff'}"
    return doc


REVEAL_JS = """async ([mode, id]) => {
    const v = window.gradtrace.app.viewer;
    // Start from every module folded (not timed): the node is then several folds deep.
    const folded = { collapsed: new Set(v.model.tree.mods.keys()), expandedRepeats: new Set(), open: new Set() };
    await v.apply({ set: folded, layout: "fresh" });
    const ref = v.model.index.idx.get(id);
    const before = v.layoutCount;
    const t0 = performance.now();
    let found = -1;
    if (mode === "new") found = await v.reveal(ref);
    else {
        // What reveal did before graph/reveal.js: open one fold, lay out, look again (≤ 16 times).
        for (let d = 0; d < 16; d++) {
            const vs = v.scene.view.byRef[ref];
            const own = vs.find((x) => v.scene.view.vnodes[x].kind !== "group");
            if (own !== undefined) { found = own; break; }
            await v.openGroup(vs[0]);
        }
    }
    const ms = performance.now() - t0;
    return [ms, v.layoutCount - before, found >= 0 && v.scene.view.vnodes[found].key === id]; }"""


def reveal_rows(page: Any, runs: int = 5) -> list[Row]:
    """Revealing a node hidden in folds: one layout per fold (old) against one layout (new)."""
    rows = []
    for n in (600, 3000):
        doc = nested_document(n)
        first_frame_seconds(page, doc, 1)
        target = next(nd["id"] for nd in reversed(doc["graph"]["nodes"])
                      if (nd.get("module") or "").startswith("enc.layers.5.ff"))
        samples: dict[str, list[float]] = {"old": [], "new": []}
        layouts: dict[str, int] = {}
        for _ in range(runs):
            for mode in ("old", "new"):
                ms, count, ok = page.evaluate(REVEAL_JS, [mode, target])
                assert ok, f"{mode} reveal did not show the node"
                samples[mode].append(ms / 1000)
                layouts[mode] = count
        old = Row(f"reveal, one layout per fold ({layouts['old']} layouts), {n:,} nodes", samples["old"])
        rows += [old, Row(f"reveal, folds opened on the view ({layouts['new']} layout), {n:,} nodes", samples["new"],
                          baseline="one layout per fold, same run", baseline_median_s=old.median)]
    return rows


def overview_rows(page: Any, runs: int = 3) -> list[Row]:
    """GRU-200 redrawn at the overview level (zoomed out until node labels are short forms)."""
    page.evaluate("(code) => window.gradtrace.app.editor.setCode(code)", GRU_200)
    before = page.evaluate("Number(document.body.dataset.ready || 0)")
    page.get_by_role("button", name=re.compile(r"^Run\b")).click()
    page.wait_for_function(f"Number(document.body.dataset.ready || 0) > {before}", timeout=180_000)
    rows = []
    for label, zoom in (("whole graph", "whole"), ("Fit, then − three times", "out3")):
        ms = page.evaluate("""async ([zoom, runs]) => {
            const app = window.gradtrace.app, c = app.canvas;
            if (zoom === "whole") c.fit({ whole: true }); else { c.fit(); for (let i = 0; i < 3; i++) c.zoomBy(0.8); }
            const out = [];
            for (let r = 0; r < runs; r++) {
                for (let i = 0; i < 100; i++) {
                    app.player.go(Math.floor(app.player.N / 2) - 50 + i, { animate: true });
                    const t0 = performance.now();
                    c.drawNow();
                    out.push(performance.now() - t0);
                    await new Promise((res) => requestAnimationFrame(res));
                }
            }
            return out; }""", [zoom, runs])
        rows.append(Row(f"GRU-200 redraw per step at the overview level, {label}", [m / 1000 for m in ms],
                        baseline="goal 16 ms (60 fps)", baseline_median_s=0.016))
    return rows


def main() -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stepping-only", action="store_true", help="measure part 2 only")
    parser.add_argument("--views-only", action="store_true",
                        help="measure only the reveal round trips and the GRU-200 overview redraw")
    parser.add_argument("--baseline-dist", type=Path, help="another build of frontend/dist to compare in part 2")
    args = parser.parse_args()
    if not (ROOT / "frontend" / "dist" / "app.js").exists():
        print("frontend/dist is not built: run `make frontend` first", file=sys.stderr)
        return 1
    if args.baseline_dist and not (args.baseline_dist / "app.js").exists():
        print(f"{args.baseline_dist} holds no app.js", file=sys.stderr)
        return 1
    env = {"GRADTRACE_TIMEOUT_S": "120", "GRADTRACE_CPU_S": "120"}
    with running_server(env) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = open_page(browser, server.url)

        if not args.stepping_only and not args.views_only:
            rows = []
            for n, goal, runs in ((500, 0.3, 7), (3000, 1.0, 5), (20000, 1.0, 3)):
                doc = synthetic_document(n)
                page_s = first_frame_seconds(page, doc, runs)
                dot_s, dot_label = dot_seconds(doc, 3 if n <= 500 else 1)
                dot_median = sorted(dot_s)[len(dot_s) // 2] if dot_s else None
                rows.append(Row(f"document → first frame, {n:,} nodes (goal ≤ {goal} s)", page_s,
                                baseline=dot_label, baseline_median_s=dot_median))
            print_table("Playground: from the document to the first frame", rows)

        if args.views_only:
            print_table("Playground: revealing a node three modules deep", reveal_rows(page))
            print_table("Playground: redraw at the overview level of the semantic zoom", overview_rows(page))
            browser.close()
            return 0

        pages = [("", page)]
        if args.baseline_dist:
            pages = [("baseline build: ", open_page(browser, server.url, args.baseline_dist)), ("this build: ", page)]
        print_table("Playground: stepping through a 5,000-node graph", stepping_rows(pages))
        if args.stepping_only:
            browser.close()
            return 0

        total, server_s, doc = gru_end_to_end(page, 3)
        nodes = len(doc.get("graph", {}).get("nodes", []))
        dot_s, dot_label = dot_seconds(doc, 1) if nodes else ([], "no graph")
        dot_median = dot_s[0] if dot_s else None
        print_table(f"GRU-200 end to end ({nodes:,} nodes, status {doc.get('status')})", [
            Row("Run → drawn graph (goal ≤ 1 s)", total, baseline=dot_label, baseline_median_s=dot_median),
            Row("  of which: waiting for the service (run + capture + transfer)", server_s),
            Row("  of which: in the page (parse, layout, first frame)",
                [t - s for t, s in zip(total, server_s, strict=True)], baseline=dot_label,
                baseline_median_s=dot_median),
        ])
        print_table("Playground: revealing a node three modules deep", reveal_rows(page))
        print_table("Playground: redraw at the overview level of the semantic zoom", overview_rows(page))
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
