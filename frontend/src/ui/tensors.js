/**
 * The inspector's tensors: every tensor of the selected node at the current step (its
 * output(s), the gradients flowing in and out at this backward step, a leaf's `.grad` and its
 * value at the start and the end), read from the viewer's tensor source (NOTE [tensor sources]
 * in tensors/source.js) when the node is selected, never before. A tensor of at most
 * TABLE_MAX elements is a table of numbers; a larger one a heatmap of a 2-D plane (a slice
 * picker chooses the plane of a 3-D or larger one) and a histogram. Hover or focus gives the
 * element's index and its number as stored (tensors/safetensors.js exactText); a click on a
 * gradient's element asks Explain about that element. Built with textContent only.
 */
import { exactText, finiteStats, shortText, strides } from "../tensors/safetensors.js";
import { SPECIAL_WORDS, TENSOR_COLOURS, drawHeatmap, drawHistogram, histogram, rgb, warmDrawing } from "../tensors/draw.js";
import { leftOutSummary, nodeTensors } from "../tensors/keys.js";
import { fmtBytes } from "../analysis/format.js";
import { afterFrame, el } from "./dom.js";

export const TABLE_MAX = 64;

/**
 * NOTE [the looked-at tensor first]
 *   When a node is selected at once (no pointer resting on it first: NOTE [fetched on hover]),
 *   its first tensor is what the person looks at, and everything else the selection draws
 *   competes with it for the page's one main thread and for the service. So the selection
 *   starts that tensor's read before anything else (the panel's `select`, called by
 *   app/viewer.js selectNode ahead of the state change); the node's other tensors are read
 *   and drawn once it is drawn and painted; and the inspector's sections below the
 *   tensors (saved values, gradients as text, `.grad` history) after the first tensor is
 *   drawn and painted (ui/inspector.js, `whenDrawn`; at most REST_WAIT_MS later), and the code
 *   pane's mark after the next frame (app/context.js showSelected). What the
 *   inspector finally shows is unchanged, and nothing above the first heatmap is added later,
 *   so the heatmap does not move once drawn.
 */
const firstDrawn = new WeakMap();  // a tensors section → its first tensor drawn

/** Resolves once the first tensor of the tensors section in `part` (a panel's inspector section) is drawn; null when it has none. */
export function whenDrawn(part) {
  const section = part && (part.dataset && part.dataset.gt === "tensors" ? part : part.querySelector && part.querySelector('[data-gt="tensors"]'));
  return (section && firstDrawn.get(section)) || null;
}
const HEAT_PX = 240;  // the heatmap's longer side on the page, in CSS pixels
/** How long the pointer rests on a node before its tensors are fetched (NOTE [fetched on hover]). */
export const HOVER_FETCH_MS = 40;

/** The legend of the heatmap's colours. */
function legend() {
  const c = TENSOR_COLOURS;
  const sw = (colour, text) => {
    const box = el("span", { class: "gt-swatch" });
    box.style.background = colour;  // CSSOM, not a style attribute: the saved file's policy allows only this
    return el("span", { class: "gt-tensor-key" }, box, text);
  };
  return el("div", { class: "gt-tensor-legend", "data-gt": "tensor-legend" },
    sw(`linear-gradient(90deg, ${rgb(c.neg)}, ${rgb(c.zero)}, ${rgb(c.pos)})`, "− 0 +"),
    ...SPECIAL_WORDS.map(([k, w]) => sw(rgb(c[k]), w)));
}

/** `[2, 0, 5]`: coordinates of flat index `f` of `shape`. */
function coords(shape, f) {
  const s = strides(shape);
  return shape.map((_, d) => Math.floor(f / s[d]) % shape[d]);
}

export class TensorView {
  /** @param {{source: object, onPick?: (item: object, index: number[]) => void}} cb */
  constructor(cb) {
    this.source = cb.source;
    this.onPick = cb.onPick || null;
    this.slices = new Map();  // key → the chosen leading coordinates, kept across redraws
  }

  /** The inspector's section for the tensors of node `i` at step `k`, or null when it has none. */
  section(model, i, k) {
    const items = nodeTensors(model.index, model.timeline, i, k);
    if (!items.length) return null;
    const file = model.doc.tensors;
    const root = el("section", { class: "gt-tensors", "data-gt": "tensors" }, el("h4", {}, "Tensors"));
    if (file && file.left_out_count) {
      root.append(el("p", { class: "gt-hint", "data-gt": "tensors-left-out" },
        // the budget is named where it left something out (a sparse gradient is not its doing)
        `${file.left_out_count} of this run's tensors (${fmtBytes(file.left_out_bytes)}) were not kept${(file.left_out || []).some((e) => e.reason === "budget") ? `, its budget being ${fmtBytes(file.budget_bytes)}` : ""}: ${leftOutSummary(file)}.`));
    }
    let first = null;  // NOTE [the looked-at tensor first]
    for (const item of items) {
      const drawn = this.item(item, first, root);
      if (item.key && !first) first = drawn;
    }
    root.append(legend());
    firstDrawn.set(root, first || Promise.resolve());
    return root;
  }

  /** Appends item's box to `root`; resolves once it is drawn (or could not be). `after`: drawn first, then this one is read. */
  item(item, after, root) {
    const box = el("div", { class: "gt-tensor-item", "data-gt": "tensor", "data-key": item.key || "" });
    const shape = item.tv.shape ? `[${item.tv.shape.join(", ")}]` : "";
    box.append(el("div", { class: "gt-tensor-title" }, `${item.title} `, el("span", { class: "gt-tensor-meta" }, `${shape} ${item.tv.dtype || ""}`.trim())));
    root.append(box);
    if (!item.key) { box.append(el("p", { class: "gt-hint" }, item.why)); return Promise.resolve(); }
    const body = el("div", { class: "gt-tensor-body" }, "reading the numbers…");
    box.append(body);
    let t0 = performance.now();
    const start = () => { t0 = performance.now(); return this.source.read(item.key); };
    const read = after ? after.then(() => afterFrame()).then(start) : start();
    if (!after) setTimeout(() => warmDrawing(finiteStats), 0);  // NOTE [warm drawing] in tensors/draw.js, if not done yet
    return read.then((t) => {
      const t1 = performance.now();
      this.draw(body, item, t);
      const t2 = performance.now(), ms = (x) => String(Math.round(x * 10) / 10);
      // the split bench/bench_tensor_page.py reports: the source's fetch and decode (of the
      // tensor's first read: a later one is cached), and the drawing
      const { fetch = 0, decode = 0 } = t.timing || {};
      Object.assign(box.dataset, { ms: ms(t2 - t0), fetchMs: ms(fetch), decodeMs: ms(decode),
        drawMs: ms(t2 - t1) });
      box.dataset.ready = "1";
    }, (err) => { body.replaceChildren(el("p", { class: "gt-hint" }, `numbers not available: ${err.message}`)); box.dataset.ready = "error"; });
  }

  draw(body, item, t) {
    const shape = t.shape, nd = shape.length;
    const count = t.values.length;
    const lead = nd > 2 ? shape.slice(0, nd - 2) : [];
    // a long 1-D tensor is drawn wrapped into a near-square plane (its last row padded)
    const wrap = nd === 1 && count > TABLE_MAX ? Math.ceil(Math.sqrt(count)) : 0;
    const rows = nd >= 2 ? shape[nd - 2] : wrap ? Math.ceil(count / wrap) : 1;
    const cols = nd >= 2 ? shape[nd - 1] : wrap || (nd === 1 ? shape[0] : 1);
    const chosen = this.slices.get(t.key) || lead.map(() => 0);
    const parts = [];
    const hover = el("div", { class: "gt-tensor-hover", "data-gt": "tensor-hover", "aria-live": "polite" }, !count ? "empty tensor" : count > TABLE_MAX ? "hover an element (or focus the heatmap: arrows, Enter)" : "hover an element");
    const plane = el("div", { class: "gt-tensor-plane" });
    if (lead.length) parts.push(this.slicePicker(t, lead, chosen, () => this.plane(plane, hover, item, t, chosen, rows, cols)));
    parts.push(plane, hover);
    const st = finiteStats(t.values);
    t.stats ??= st;  // the plane's colour scale reads it (once per tensor)
    if (count > TABLE_MAX) parts.push(this.histogramOf(t, st));
    body.replaceChildren(...parts);
    this.plane(plane, hover, item, t, chosen, rows, cols);
  }

  slicePicker(t, lead, chosen, redraw) {
    const box = el("div", { class: "gt-tensor-slice", "data-gt": "tensor-slice" }, "slice ");
    lead.forEach((n, d) => {
      const pick = el("select", { "aria-label": `index of dimension ${d}`, "data-dim": String(d) });
      for (let j = 0; j < n; j++) pick.append(el("option", { value: String(j) }, String(j)));
      pick.value = String(chosen[d]);
      pick.addEventListener("change", () => { chosen[d] = Number(pick.value); this.slices.set(t.key, chosen); redraw(); });
      box.append("[", pick, "] ");
    });
    box.append(`[:, :]`);
    return box;
  }

  plane(plane, hover, item, t, chosen, rows, cols) {
    const s = strides(t.shape);
    const offset = chosen.reduce((a, c, d) => a + c * s[d], 0);
    const show = (f) => { hover.textContent = `[${coords(t.shape, f).join(", ")}] = ${exactText(t, f)}`; hover.dataset.index = coords(t.shape, f).join(","); hover.dataset.value = exactText(t, f); };
    const pick = (f) => { if (this.onPick) this.onPick(item, coords(t.shape, f)); };
    if (t.values.length <= TABLE_MAX) {
      const table = el("table", { class: "gt-tensor-table", "data-gt": "tensor-table" });
      for (let r = 0; r < rows; r++) {
        const tr = el("tr");
        for (let c = 0; c < cols; c++) {
          const f = offset + r * cols + c;
          const x = t.values[f];
          // four significant digits keep a row of numbers on one line in the inspector's width;
          // the exact number is the cell's title and the hover line's
          const td = el("td", { tabindex: "0", "data-index": coords(t.shape, f).join(","), title: exactText(t, f) }, shortText(t, f));
          if (!Number.isFinite(x) && t.dtype !== "BOOL" && !t.big) td.style.background = rgb(TENSOR_COLOURS[Number.isNaN(x) ? "nan" : x > 0 ? "pinf" : "ninf"]);
          td.addEventListener("mouseenter", () => show(f));
          td.addEventListener("focus", () => show(f));
          td.addEventListener("click", () => pick(f));
          tr.append(td);
        }
        table.append(tr);
      }
      plane.replaceChildren(table);
      return;
    }
    const st = t.stats || finiteStats(t.values);
    const half = Math.max(Math.abs(st.min), Math.abs(st.max));
    const canvas = el("canvas", { class: "gt-tensor-heat", "data-gt": "tensor-heatmap", role: "img",
      "aria-label": `heatmap of ${rows} × ${cols} values, blue negative, red positive, scale ±${Number.isFinite(half) ? half.toPrecision(3) : 0}` });
    const cells = Math.min(rows * cols, t.values.length - offset);  // a wrapped 1-D tensor's padding stays blank
    drawHeatmap(canvas, t.values, offset, rows, cols, Number.isFinite(half) ? half : 0, cells);
    const scale = Math.min(HEAT_PX / cols, HEAT_PX / rows, 24);
    canvas.style.width = `${Math.max(1, Math.round(cols * scale))}px`;  // at most the inspector's width (static/app.css)
    if (rows * scale < 12) canvas.style.height = "12px";
    const at = (e) => {
      const b = canvas.getBoundingClientRect();
      const c = Math.min(cols - 1, Math.max(0, Math.floor(((e.clientX - b.left) / b.width) * cols)));
      const r = Math.min(rows - 1, Math.max(0, Math.floor(((e.clientY - b.top) / b.height) * rows)));
      return Math.min(offset + r * cols + c, offset + cells - 1);
    };
    canvas.addEventListener("mousemove", (e) => show(at(e)));
    canvas.addEventListener("click", (e) => pick(at(e)));
    // keyboard: focus the heatmap, arrows move over the elements, Enter explains the one shown
    canvas.tabIndex = 0;
    let cursor = offset;
    canvas.addEventListener("focus", () => show(cursor));
    canvas.addEventListener("keydown", (e) => {
      const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -cols, ArrowDown: cols }[e.key];
      if (step != null) {
        const next = cursor + step;
        if (next >= offset && next < offset + cells) cursor = next;
        show(cursor);
        e.preventDefault();
      } else if (e.key === "Enter") { pick(cursor); e.preventDefault(); }
    });
    const scaleText = el("div", { class: "gt-tensor-meta" }, `colour scale ±${Number.isFinite(half) ? +half.toPrecision(4) : 0}`);
    plane.replaceChildren(canvas, scaleText);
  }

  histogramOf(t, st) {
    const canvas = el("canvas", { class: "gt-tensor-hist", "data-gt": "tensor-histogram", role: "img", "aria-label": "histogram of the finite values" });
    const box = el("div", { class: "gt-tensor-histbox" }, canvas);
    const words = [];
    if (st.finite) words.push(`${st.finite} finite values from ${+st.min.toPrecision(4)} to ${+st.max.toPrecision(4)}`);
    if (st.zeros) words.push(`${st.zeros} zeros`);
    for (const [k, w] of SPECIAL_WORDS) if (st[k]) words.push(`${st[k]} ${w}`);
    box.append(el("div", { class: "gt-tensor-meta", "data-gt": "tensor-counts" }, words.join(" · ")));
    drawHistogram(canvas, st.finite ? histogram(t.values, st.min, st.max) : []);
    return box;
  }
}

/**
 * The tensors as a viewer panel (NOTE [one panel shape] in ui/registry.js): a section of the
 * inspector wherever the viewer has a tensor source (`ctx.service.tensors`) for the document.
 *
 * NOTE [fetched on hover]
 *   A person points at a node before clicking it, and from a service each tensor is a round
 *   trip (one Range request) that the click would otherwise start. So once the pointer has
 *   rested HOVER_FETCH_MS on a node, the tensors its selection would show at the current step
 *   are asked for (`source.prefetch`: at most PREFETCH_BYTES of them, tensors/source.js); the
 *   selection then reads the same cached promises. Passing over nodes on the way fetches
 *   nothing, and the page's first frame still asks for no tensor.
 */
export const tensorsPanel = {
  id: "tensors",
  mount(ctx) {
    if (!ctx.service.tensors) return null;
    const views = new Map(), prepared = new WeakSet();
    const whenIdle = globalThis.requestIdleCallback || ((f) => setTimeout(f, 50));
    let resting = null, timer = 0;
    return {
      select(model, node) {  // NOTE [the looked-at tensor first]
        const source = ctx.service.tensors(model.doc), i = model.index.idx.get(node.id);
        if (!source || i == null) return;
        const first = nodeTensors(model.index, model.timeline, i, ctx.state.get("step")).find((t) => t.key);
        if (first) source.read(first.key).catch(() => { /* said in the inspector */ });
      },
      hover(model, node) {  // NOTE [fetched on hover]
        if (!node || node === resting) return;
        resting = node;
        clearTimeout(timer);
        timer = setTimeout(() => {
          const source = ctx.service.tensors(model.doc), i = model.index.idx.get(node.id);
          if (!source || i == null || ctx.model !== model || resting !== node) return;
          source.prefetch(nodeTensors(model.index, model.timeline, i, ctx.state.get("step")).map((t) => t.key).filter(Boolean));
        }, HOVER_FETCH_MS);
      },
      // once a run's first frame is drawn (the viewer's generation moved on), in idle time:
      // the source's index (never a tensor's bytes: NOTE [tensor sources] in
      // tensors/source.js) and the drawing code (NOTE [warm drawing] in tensors/draw.js)
      update(model, state, changed) {
        if (!changed.includes("view")) return;
        const source = ctx.service.tensors(model.doc);
        if (!source || prepared.has(source)) return;
        prepared.add(source);
        const before = ctx.generation;
        const when = () => {
          if (ctx.doc !== model.doc) return;  // another document came first
          if (ctx.generation === before) { whenIdle(when); return; }
          source.prepare();
          warmDrawing(finiteStats);
        };
        whenIdle(when);
      },
      inspect(model, node) {
        const source = ctx.service.tensors(model.doc);
        if (!source) return null;
        if (!views.has(source)) {
          views.clear();  // one document's source at a time
          views.set(source, new TensorView({ source, onPick: (item, index) => {
            const explain = ctx.panels.explain;
            if (explain && explain.pickElement && /^grad_/.test(item.title)) explain.pickElement(index);
          } }));
        }
        const i = model.index.idx.get(node.id);
        return i == null ? null : views.get(source).section(model, i, ctx.state.get("step"));
      },
    };
  },
};
