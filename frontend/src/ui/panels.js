/**
 * Small page panels: results (status badge, error, stdout), the legend, the module list with
 * collapse/expand buttons, and the accessible node list that mirrors the canvas for
 * keyboard and screen-reader users (the canvas itself has no DOM to read).
 */
import { KINDS } from "../graph/document.js";
import { fmtTensorShort } from "../analysis/format.js";
import { errorSentence } from "../analysis/words.js";
import { withCode } from "./dom.js";
import { statusWithFindings } from "./findings.js";

const LIMIT_STATUSES = { timeout: "Time limit", memory_limit: "Memory limit", output_limit: "Output limit", graph_limit: "Graph limit", crashed: "Crashed" };
export const NODE_LIST_MAX = 400;

export function renderStatus(badge, status, text) {
  badge.hidden = !status;
  badge.className = `gt-badge gt-status-${status || "none"}`;
  badge.textContent = text || "";
}

/** Status badge, error box and stdout for a run document. */
export function renderResults(els, doc, onLine) {
  const status = doc.status;
  const label = status === "ok" ? "ok" : status === "error" ? "error" : LIMIT_STATUSES[status] || status;
  renderStatus(els.badge, status, statusWithFindings(doc.message && status !== "ok" ? `${label}: ${doc.message}` : label, doc));
  if (status === "ok" && doc.analysis && doc.analysis.badge) els.badge.classList.add("gt-status-nonfinite");
  els.error.replaceChildren();
  els.error.hidden = !doc.error;
  if (doc.error) {
    const head = document.createElement("strong");
    head.textContent = `${doc.error.type}: `;
    const msg = document.createElement("span");
    msg.textContent = doc.error.message;
    els.error.append(head, msg);
    if (doc.error.line != null) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "gt-link";
      b.textContent = ` (line ${doc.error.line})`;
      b.addEventListener("click", () => onLine(doc.error.line));
      els.error.append(b);
    }
  }
  els.stdout.textContent = doc.stdout || "";
  els.stdoutWrap.hidden = !doc.stdout;
}

/**
 * Under the error's first line, where it happened and why, in words (analysis/words.js), with
 * a button to the line of the in-place op that changed the tensor.
 */
export function renderErrorExplain(box, words, errors, onLine) {
  box.querySelector(".gt-error-explain")?.remove();
  if (!words || !words.doc.error) return;
  const text = errorSentence(words, { besideMessage: true });  // the box above has the message
  if (!text) return;
  const p = document.createElement("p");
  p.className = "gt-error-explain";
  p.append(...withCode(text));
  const ip = errors && errors.inplace;
  const links = [];
  if (ip && ip.line != null) links.push([`changed in place at line ${ip.line}`, ip.line]);
  for (const [text, line] of links) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "gt-link";
    b.textContent = `(${text})`;
    b.addEventListener("click", () => onLine(line));
    p.append(" ", b);
  }
  box.append(p);
}

export function renderLegend(root) {
  const colourBy = root.querySelector('[data-gt="colour-by"]');  // its own panel's (ui/colour-by.js)
  root.replaceChildren(...(colourBy ? [colourBy] : []));
  for (const [kind, text] of Object.entries(KINDS)) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = `gt-swatch gt-swatch-${kind}`;
    li.append(sw, text);
    root.append(li);
  }
  // Every other mark the graph can show (render/draw.js), each with a swatch or its glyph.
  const extra = [["gt-swatch-current", "current step"], ["gt-swatch-done", "just done"], ["gt-swatch-pos", "gradient > 0 (width ∝ |grad|)"], ["gt-swatch-neg", "gradient < 0"],
    ["gt-swatch-reached", "bar: reached by this backward pass (faded: by an earlier one)"],
    ["gt-swatch-order1", "band: built by a backward with create_graph=True (1st-order graph)"],
    ["gt-swatch-order2", "two bands: built by a backward over that graph (2nd order)"],
    ["gt-swatch-box", "▾ a module, or an open iteration or call (click its title to fold it)"],
    ["gt-swatch-selected", "selected node"], ["gt-swatch-linesel", "made by the selected code line"]];
  for (const [cls, text] of extra) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = `gt-swatch ${cls}`;
    li.append(sw, text);
    root.append(li);
  }
  // The findings' marks (ui/findings.js, render/draw.js, render/nonfinite.js).
  const marks = [["gt-swatch-error", "red outline: where the run's error was raised, or a hint's node (⚑)"],
    ["gt-swatch-nan", "red outline and ✱: where the first NaN or inf was made"],
    ["gt-swatch-nanedge", "dashed red edge: it carried a NaN or inf"],
    ["gt-swatch-suspect", "dashed outline: the node a gradient check blames (✗ suspect)"]];
  for (const [cls, text] of marks) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = `gt-swatch ${cls}`;
    li.append(sw, text);
    root.append(li);
  }
  const glyphs = [["✂", "a cut: detach(), no_grad or .data; gradients stop here"], ["⚠", "where the run's error was raised"],
    ["✎", "the in-place change that caused the error"], ["⚑", "a hint: a classic mistake, with its fix (see Hints)"],
    ["✱", "the first NaN or inf of the run"], ["→ h", "the snippet's variable for a node's output"],
    ["your code", "a node of your own autograd.Function: its backward is your code"],
    ["tied", "one parameter reached under several names (a = b)"],
    ["(×N)", "the leaf's .grad holds N accumulations"],
    ["‖v‖", "the norm of a tensor's values"], ["Addm…", "zoomed out: a label's short form (the whole name on hover)"],
    ["name", "zoomed out: a module's name over its region"]];
  for (const [glyph, text] of glyphs) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = "gt-legend-glyph";
    sw.textContent = glyph;
    li.append(sw, text);
    root.append(li);
  }
  // NOTE [the legend stays inside the graph]: opened, it is never taller than the graph's area
  // below it; it scrolls instead (a long legend over the timeline hid the transport).
  const menu = root.closest("details");
  const graph = root.getRootNode().querySelector("#graph");
  if (menu && graph && !menu.dataset.fitsGraph) {
    menu.dataset.fitsGraph = "1";
    menu.addEventListener("toggle", () => {
      if (!menu.open) return;
      const room = graph.getBoundingClientRect().bottom - root.getBoundingClientRect().top - 8;
      root.style.maxHeight = `${Math.max(120, Math.floor(room))}px`;
    });
  }
}

/** The module tree as a list of toggle buttons (Collapse X / Expand X). */
export function renderModules(root, tree, collapsed, expandedRepeats, onToggle, onRepeat) {
  root.replaceChildren();
  if (!tree.mods.size) { root.textContent = "No nn.Module calls in this run."; return; }
  const ul = document.createElement("ul");
  const walk = [...tree.roots].reverse().map((p) => [p, 0]);
  while (walk.length) {
    const [path, depth] = walk.pop();
    const m = tree.mods.get(path);
    const li = document.createElement("li");
    li.style.paddingLeft = `${depth * 12}px`;
    const b = document.createElement("button");
    b.type = "button";
    const isCollapsed = collapsed.has(path);
    b.textContent = `${isCollapsed ? "▸" : "▾"} ${path} (${m.count})`;
    b.setAttribute("aria-label", `${isCollapsed ? "Expand" : "Collapse"} ${path}`);
    b.setAttribute("aria-expanded", String(!isCollapsed));
    b.addEventListener("click", () => onToggle(path));
    li.append(b);
    if (tree.repeats.has(path)) {
      const r = document.createElement("button");
      r.type = "button";
      const merged = !expandedRepeats.has(path);
      r.textContent = merged ? `× ${tree.repeats.get(path).length} merged` : "merge repeats";
      r.setAttribute("aria-label", merged ? `Show the ${tree.repeats.get(path).length} blocks of ${path} separately` : `Merge the repeated blocks of ${path}`);
      r.addEventListener("click", () => onRepeat(path));
      li.append(" ", r);
    }
    ul.append(li);
    for (const c of [...m.children].reverse()) walk.push([c, depth + 1]);
  }
  root.append(ul);
}

/** One button per revealed visible node, with its label and current gradient. */
export function renderNodeList(root, scene, k, onPick, st) {
  const { vnodes } = scene.view;
  const items = [];
  for (let v = 0; v < vnodes.length && items.length < NODE_LIST_MAX; v++) {
    if (!(scene.reveal[v] <= k)) continue;
    const n = vnodes[v];
    let text = `${n.label} — ${KINDS[n.kind] || n.kind}${n.sub ? `, ${n.sub}` : ""}`;
    const g = scene.timeline.leafGradAt(n.refs[0], k);
    if (g) text += `, grad ${fmtTensorShort(g.value, 6)}`;
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = text;
    b.dataset.v = String(v);
    if (st && st.current.has(v)) b.setAttribute("aria-current", "step");
    else if (st && st.justDone.has(v)) b.dataset.justDone = "true";
    if (scene.errorV.includes(v)) {
      // The node autograd raised on is "true"; another node the error concerns (the in-place op
      // that caused it) is "cause". Each says what the canvas writes next to it.
      const own = n.refs.includes(scene.index.errorNode) || scene.index.errorNode < 0;
      b.dataset.error = own ? "true" : "cause";
      const why = scene.errorLabels && scene.errorLabels.get(v);
      if (why) b.textContent += ` — ${why.replace(/^\S+ /, "")}`;
    }
    b.addEventListener("click", () => onPick(v));
    li.append(b);
    items.push(li);
  }
  const shown = items.length;
  let revealed = 0;
  for (let v = 0; v < vnodes.length; v++) if (scene.reveal[v] <= k) revealed++;
  if (revealed > shown) {
    const li = document.createElement("li");
    li.textContent = `… and ${revealed - shown} more nodes (zoom the graph, or collapse modules, to see them)`;
    items.push(li);
  }
  root.replaceChildren(...items);
}

/** The module list as a viewer panel (NOTE [one panel shape] in ui/registry.js), redrawn with each layout. */
export const modulesPanel = {
  id: "modules",
  mount(ctx) {
    const box = ctx.part("modules"), list = ctx.part("modules-list");
    return {
      update(model, st, changed) {
        if (!changed.includes("view")) return;
        if (list) renderModules(list, model.tree, st.collapsed, st.expandedRepeats, (p) => ctx.toggleModule(p), (p) => ctx.toggleRepeat(p));
        if (box) box.hidden = model.tree.mods.size === 0;
      },
    };
  },
};

/**
 * The accessible node list as a viewer panel (NOTE [one panel shape] in ui/registry.js):
 * redrawn with each layout, and after each step (every 250 ms at most while playing).
 */
export const nodeListPanel = {
  id: "node-list",
  mount(ctx) {
    const root = ctx.part("node-list");
    if (!root) return null;
    let timer = 0;
    const refresh = () => { if (ctx.scene) renderNodeList(root, ctx.scene, ctx.state.get("step"), (v) => ctx.selectNode(v), ctx.canvas.stepState()); };
    return {
      update(model, st, changed) {
        if (changed.includes("view")) refresh();
        else if (changed.includes("step")) { clearTimeout(timer); timer = setTimeout(refresh, st.playing ? 250 : 0); }
      },
    };
  },
};

/** The graph's size line, the "simplified" note and the empty graph's words as a viewer panel (NOTE [one panel shape] in ui/registry.js). */
export const graphStatusPanel = {
  id: "graph-status",
  mount(ctx) {
    const stats = ctx.part("graph-stats"), simplified = ctx.part("simplified"), empty = ctx.part("graph-empty");
    return {
      update(model, st, changed) {
        if (changed.includes("document") && empty) {
          empty.hidden = model.index.nodes.length > 0;
          if (!model.index.nodes.length) empty.textContent = "This run created no autograd node.";
        }
        if (!changed.includes("view") || !ctx.scene) return;
        const { view, layout } = ctx.scene, n = model.index.nodes.length;
        if (simplified) simplified.hidden = !layout.simplified;
        if (stats) stats.textContent = `${n} nodes · ${model.index.edges.length} edges${view.vnodes.length !== n ? ` · ${view.vnodes.length} shown` : ""}`;
      },
    };
  },
};
