/**
 * The compare page /c/{a}..{b} (templates/compare.html): two embedded viewers (src/embed.js),
 * one per run, driven by one transport over the comparison's steps (compare/sync.js), tinted by
 * the comparison (compare/tints.js), with the memory strip (compare/memory.js), the presets and
 * the what-if slider (compare/presets.js, compare/whatif.js). The single-run viewer is used as
 * it is: nothing here changes how it draws one run.
 */
import CSS from "gt:viewer-css";
import { EmbeddedViewer } from "../embed.js";
import { cursorTable, divergenceCursor, fmtSize, memoryAt, pairedId, tintMaps } from "./sync.js";
import { installTints } from "./tints.js";
import { MemoryStrip } from "./memory.js";
import { installPresets } from "./presets.js";
import { installWhatIf } from "./whatif.js";

// Inside each pane: no transport of its own (the page's drives both), code beside the graph. The
// code column is narrow and the inspector a short row: two panes share 1280 px, and the graph
// is what is compared, so it gets most of each pane.
const PANE_CSS = `
.gt-transport, #tl-scrub, #tl-segments, .gt-keys { display: none !important; }
.gt-viewer { border-radius: 4px; }
.gt-viewer .gt-main { grid-template-columns: minmax(110px, 20%) minmax(0, 1fr); grid-template-rows: minmax(0, 1fr) minmax(60px, 15%);
  grid-template-areas: "code graph" "code inspector"; }
.gt-viewer .gt-inspector { border-left: 0; border-top: 1px solid var(--border); }
@container (max-width: 520px) {
  .gt-viewer .gt-main { grid-template-columns: minmax(90px, 22%) minmax(0, 1fr); grid-template-rows: minmax(0, 1fr) minmax(48px, 12%); }
  .gt-viewer .gt-toolbar { flex-wrap: nowrap; overflow-x: auto; padding: 4px 6px; }
  .gt-viewer .gt-toolbar > * { flex: none; }
  .gt-viewer .gt-sentence { min-height: 0; max-height: 2.8em; font-size: 12px; }
}`;

const T0 = performance.now();
const readJson = (id) => JSON.parse(document.getElementById(id).textContent);
const $ = (id) => document.getElementById(id);

class ComparePage {
  constructor() {
    this.marks = { script: T0 };
    this.config = readJson("gt-config");
    // Both documents and the comparison are asked for at once (the documents are preloaded by
    // the page): NOTE [comparison started with the page] in backend/gradtrace/api/compare_page.py.
    this.docs = null;
    this.docsReady = fetchDocs(this.config.docs).then((docs) => { this.marks.parsed = performance.now(); this.docs = docs; return docs; });
    this.cmpReady = fetchComparison(this.config.a, this.config.b);
    this.cmpReady.catch(() => {});  // reported by load(), which awaits it
    const workerUrl = new URL("/dist/layout-worker.js", location.href);
    const make = (side) => new EmbeddedViewer($(`pane-${side}`), { css: CSS + PANE_CSS, workerUrl, height: "100%",
      onSelect: (sel) => this._mirror(side, sel) });
    this.panes = { a: make("a"), b: make("b") };
    // Each pane's graph is fitted whole (a node only one run has may be anywhere in it), so a
    // minimap would only cover a part of it.
    for (const p of Object.values(this.panes)) { p.canvas.minimap.off = true; p.canvas.wholeByDefault = true; }
    this.cursor = 0;
    this.memory = new MemoryStrip($("c-memory"), (c) => this.go(c, { reveal: true }));
    this._bindTransport();
  }

  /** Show the comparison `cmp` (on load, and again when what-if replaces run B). */
  setComparison(cmp) {
    this.cmp = cmp;
    this.table = cursorTable(cmp.steps);
    this.divergeAt = divergenceCursor(cmp);
    const tints = tintMaps(cmp);
    installTints(this.panes.a, tints.a);
    installTints(this.panes.b, tints.b);
    $("c-scrub").max = String(cmp.steps.length);
    $("c-diverge").disabled = this.divergeAt < 0;
    $("c-diverge").title = cmp.first_divergence ? cmp.first_divergence.sentence : "No value or gradient differs beyond tolerance";
    const n = cmp.steps.length;
    const series = { a: new Array(n + 1), b: new Array(n + 1) };
    for (let c = 0; c <= n; c++) { const m = memoryAt(cmp, this.table, c); series.a[c] = m.a; series.b[c] = m.b; }
    this.memory.setSeries(series);
    $("c-memory-label").textContent = `Saved tensors alive — peak ${fmtSize(cmp.memory_a.peak)} in A, ${fmtSize(cmp.memory_b.peak)} in B`
      + (cmp.memory_a.recomputed || cmp.memory_b.recomputed ? ` · recomputed in backward: ${cmp.memory_a.recomputed} ops in A, ${cmp.memory_b.recomputed} in B` : "");
    this._summary(cmp);
    for (const side of ["a", "b"]) $(`pane-${side}-name`).textContent = paneName(this.docs[side], cmp[side]);
  }

  /**
   * Lay both runs out while the service compares them (GET /api/compare/{a}..{b}): the first
   * frame (`data-frame`) waits for the slower of the two, not their sum; `data-ready` once the
   * comparison is shown too.
   */
  async load() {
    const t0 = performance.now();
    const cmp = this.cmpReady;
    await this.docsReady;
    this.marks.load = t0;
    await Promise.all(["a", "b"].map((side) => this.panes[side].load(this.docs[side], { step: 0 })
      .then(() => { this.marks[side] = performance.now(); })));
    this.firstFrameMs = performance.now() - t0;
    document.body.dataset.frame = "1";
    const got = await cmp;
    this.marks.cmp = performance.now();
    this.setComparison(got);
    this.go(0);
    this.readyMs = performance.now() - t0;
    document.body.dataset.ready = "1";
  }

  /** Move both runs to cursor c; `reveal` also selects and centres the step's nodes. */
  go(c, { reveal = false } = {}) {
    if (!this.cmp) return;  // the comparison is on its way (load)
    const n = this.cmp.steps.length;
    this.cursor = Math.max(0, Math.min(n, c));
    this.panes.a.go(this.table.a[this.cursor]);
    this.panes.b.go(this.table.b[this.cursor]);
    $("c-scrub").value = String(this.cursor);
    $("c-label").textContent = `Step ${this.cursor}/${n}`;
    $("c-where").textContent = this._where();
    this.memory.setCursor(this.cursor);
    if (reveal && this.cursor > 0) {
      const [ea, eb] = this.cmp.steps[this.cursor - 1];
      this._selecting = true;
      if (ea != null) this.panes.a.selectById(this.docs.a.events[ea].node);
      if (eb != null) this.panes.b.selectById(this.docs.b.events[eb].node);
      this._selecting = false;
    }
  }

  jumpToDivergence() {
    if (!this.cmp || this.divergeAt < 0) return;
    this.go(this.divergeAt);
    const d = this.cmp.first_divergence;
    this._selecting = true;
    this.panes.a.selectById(d.a);
    this.panes.b.selectById(d.b);
    this._selecting = false;
    $("c-where").textContent = d.sentence;
  }

  _where() {
    if (!this.cursor) return "Before the first event of either run.";
    const [ea, eb] = this.cmp.steps[this.cursor - 1];
    if (ea == null) return "An event only B has (A waits).";
    if (eb == null) return "An event only A has (B waits).";
    return this.cursor === this.divergeAt ? "First divergence." : "";
  }

  /** A node clicked in one pane selects its pair in the other. */
  _mirror(side, sel) {
    if (this._selecting || !sel || !sel.id || !this.cmp) return;
    const other = side === "a" ? "b" : "a";
    const id = pairedId(this.cmp, side, sel.id);
    this._selecting = true;
    if (id) this.panes[other].selectById(id);
    this._selecting = false;
  }

  _summary(cmp) {
    const el = $("summary");
    el.replaceChildren();
    const tag = (cls, text) => Object.assign(document.createElement("span"), { className: cls, textContent: text });
    if (cmp.only_a.length) el.append(tag("gt-only-a", `${cmp.only_a.length} only in A`), " · ");
    if (cmp.only_b.length) el.append(tag("gt-only-b", `${cmp.only_b.length} only in B`), " · ");
    el.append(cmp.summary);
  }

  _bindTransport() {
    const step = (d) => this.go(this.cursor + d, { reveal: true });
    $("c-start").addEventListener("click", () => this.go(0));
    $("c-back").addEventListener("click", () => step(-1));
    $("c-fwd").addEventListener("click", () => step(1));
    $("c-end").addEventListener("click", () => this.go(Infinity));
    $("c-play").addEventListener("click", () => this._togglePlay());
    $("c-scrub").addEventListener("input", (ev) => this.go(Number(ev.target.value)));
    $("c-diverge").addEventListener("click", () => this.jumpToDivergence());
    document.addEventListener("keydown", (ev) => {
      if (ev.target.closest && ev.target.closest("textarea, input, select")) return;
      const keys = { ArrowRight: () => step(1), ArrowLeft: () => step(-1), Home: () => this.go(0),
        End: () => this.go(Infinity), " ": () => this._togglePlay() };
      if (keys[ev.key] && !ev.defaultPrevented) { ev.preventDefault(); keys[ev.key](); }
    });
  }

  _togglePlay() {
    if (!this.cmp) return;
    if (this._timer) { clearInterval(this._timer); this._timer = 0; $("c-play").textContent = "▶"; return; }
    if (this.cursor >= this.cmp.steps.length) this.go(0);
    $("c-play").textContent = "⏸";
    const every = Math.max(16, Math.min(400, 20000 / Math.max(1, this.cmp.steps.length)));
    this._timer = setInterval(() => {
      if (this.cursor >= this.cmp.steps.length) { this._togglePlay(); return; }
      this.go(this.cursor + 1);
    }, every);
  }
}

/** Both run documents, fetched as stored (gzip on the wire); one fetch when both are one. */
async function fetchDocs(urls) {
  const text = async (url) => {
    const res = await fetch(url);
    if (!res.ok) {
      const body = await res.json().catch(() => null);
      throw new Error((body && body.error && body.error.message) || `the service answered ${res.status} for ${url}`);
    }
    return res.text();
  };
  const ta = text(urls.a);
  const [a, b] = await Promise.all([ta, urls.b === urls.a ? ta : text(urls.b)]);
  return { a: JSON.parse(a), b: JSON.parse(b) };
}

async function fetchComparison(a, b) {
  const res = await fetch(`/api/compare/${encodeURIComponent(a)}..${encodeURIComponent(b)}`);
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error((body && body.error && body.error.message) || `the service answered ${res.status}`);
  return body;
}

function paneName(doc, ref) {
  const parts = [`seed ${doc.seed ?? "—"}`, doc.device || "cpu", `${ref.nodes} nodes`, `status ${doc.status}`];
  return parts.join(" · ");
}

async function main() {
  const page = new ComparePage();
  window.gradtrace = { page };
  await page.docsReady;
  installPresets(page);
  installWhatIf(page);
  await page.load();
}

main().catch((err) => {
  $("summary").textContent = `The compare page could not open: ${err.message}`;
  console.error(err);
});
