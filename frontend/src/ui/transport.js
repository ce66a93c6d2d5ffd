/**
 * The transport bar: ⏮ ‹ ▶/⏸ › ⏭, "Step k/N · phase", a scrubber with labelled phase
 * segments, and the speed. Plain DOM over a Player; all controls are labelled buttons.
 *
 * NOTE [icons]
 *   The buttons draw inline SVG icons rather than the Unicode media symbols (⏮ ⏸ ⏭), which
 *   Debian's default fonts draw as tofu or emoji; SVG looks the same everywhere and follows
 *   the text colour (currentColor).
 */
import { segmentLabel } from "../analysis/words.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const ICONS = {
  start: "M5 4h2v16H5zM19 4v16L8 12z",
  back: "M16 4v16L6 12z",
  play: "M7 4v16l13-8z",
  pause: "M6 4h4v16H6zM14 4h4v16h-4z",
  fwd: "M8 4v16l10-8z",
  end: "M17 4h2v16h-2zM5 4v16l11-8z",
};

export function icon(name) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.classList.add("gt-icon");
  const path = document.createElementNS(SVG_NS, "path");
  path.setAttribute("d", ICONS[name]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}

/** A 2-D context for measuring segment labels, made on first use. */
let measure = null;

export class Transport {
  constructor(root, player) {
    this.player = player;
    this.root = root;
    const q = (s) => root.querySelector(`[data-gt="${s}"]`);
    this.btn = { start: q("tl-start"), back: q("tl-back"), play: q("tl-play"), fwd: q("tl-fwd"), end: q("tl-end") };
    for (const [name, b] of Object.entries(this.btn)) b.replaceChildren(icon(name));
    this.label = q("tl-label");
    this.scrub = q("tl-scrub");
    this.segBar = q("tl-segments");
    this.speed = q("tl-speed");
    this.labelOf = (s) => s.label;
    this.btn.start.addEventListener("click", () => player.phaseBack());
    this.btn.back.addEventListener("click", () => player.step(-1));
    this.btn.play.addEventListener("click", () => player.toggle());
    this.btn.fwd.addEventListener("click", () => player.step(1));
    this.btn.end.addEventListener("click", () => player.phaseForward());
    this.scrub.addEventListener("input", () => player.go(Number(this.scrub.value), { fromUser: true }));
    this.speed.addEventListener("change", () => player.setSpeed(this.speed.value));
    this._playing = null;
  }

  /** @param labelOf  how a segment is named (analysis/words.js segmentLabel: "backward 0 (building a graph)") */
  setSegments(segments, N, labelOf = (s) => s.label) {
    this.labelOf = labelOf;
    this.segBar.replaceChildren();
    for (const s of segments) {
      const name = labelOf(s);
      const el = document.createElement("button");
      el.type = "button";
      el.className = `tl-seg tl-${s.phase}${name.includes("building a graph") ? " tl-higher" : ""}`;
      el.style.left = `${((s.start - 1) / Math.max(N, 1)) * 100}%`;
      el.style.width = `${((s.end - s.start + 1) / Math.max(N, 1)) * 100}%`;
      el.textContent = name;
      el.dataset.name = name;
      el.dataset.frac = String((s.end - s.start + 1) / Math.max(N, 1));
      el.title = `${name}: steps ${s.start}–${s.end}`;
      el.setAttribute("aria-label", `Jump to ${name} (steps ${s.start} to ${s.end})`);
      el.addEventListener("click", () => this.player.go(s.start, { fromUser: true }));
      // A create_graph backward is one segment; the steps that build its graph are marked inside
      // it (graph/timeline.js NOTE [one segment per pass]).
      const len = s.end - s.start + 1;
      for (const p of s.parts || []) {
        if (p.phase !== "forward" || s.phase !== "backward") continue;
        const mark = document.createElement("span");
        mark.className = "tl-built";
        mark.setAttribute("aria-hidden", "true");
        mark.style.left = `${((p.start - s.start) / len) * 100}%`;
        mark.style.width = `${((p.end - p.start + 1) / len) * 100}%`;
        el.append(mark);
      }
      this.segBar.append(el);
    }
    this.scrub.max = String(N);
    this.fitLabels();
    if (!this._resize && typeof ResizeObserver === "function") {
      this._resize = new ResizeObserver(() => this.fitLabels());
      this._resize.observe(this.segBar);
    }
  }

  /**
   * NOTE [segment labels that fit]: a training loop of 20 turns has 40 segments, a few pixels
   * each; clipped to "f…" and "b…" they are noise. A segment shows its name where the name, or
   * at least its first 8 characters and an ellipsis ("backward…"), fits; elsewhere the text is
   * transparent (still its accessible name, with the title) and the colour alone says forward
   * or backward, while the step label and the iteration picker say where the step is.
   */
  fitLabels() {
    const width = this.segBar.clientWidth;
    const segs = [...this.segBar.children];
    if (!segs.length) return;
    if (!measure) measure = document.createElement("canvas").getContext("2d");
    if (measure) measure.font = getComputedStyle(segs[0]).font || "10.5px sans-serif";
    const px = (t) => (measure ? measure.measureText(t).width : t.length * 6.5) + 10;  // + padding and border
    for (const el of segs) {
      const name = el.dataset.name || "";
      const need = Math.min(px(name), px(`${name.slice(0, 8)}…`));
      const quiet = width > 0 && Number(el.dataset.frac) * width < need;
      el.style.color = quiet ? "transparent" : "";
    }
  }

  showStep(k, N, playing, segment) {
    this.scrub.value = String(k);
    this.scrub.setAttribute("aria-valuetext", `step ${k} of ${N}`);
    const phase = k === 0 ? "start" : segment ? this.labelOf(segment) : "";
    this.label.textContent = `Step ${k}/${N}${phase ? ` · ${phase}` : ""}`;
    if (this._playing !== playing) {
      this._playing = playing;
      this.btn.play.replaceChildren(icon(playing ? "pause" : "play"));
      this.btn.play.setAttribute("aria-label", playing ? "Pause" : "Play");
    }
    this.btn.back.disabled = k <= 0;
    this.btn.start.disabled = k <= 0;
    this.btn.fwd.disabled = k >= N;
    this.btn.end.disabled = k >= N;
    this.btn.play.disabled = N === 0;
  }
}

/**
 * The transport as a viewer panel (NOTE [one panel shape] in ui/registry.js): the document's
 * segments named in words (analysis/words.js segmentLabel), and the step as it is shown.
 */
export const transportPanel = {
  id: "transport",
  mount(ctx) {
    const root = ctx.part("timeline");
    if (!root) return null;
    const transport = new Transport(root, ctx.player);
    transport.update = (model, st, changed) => {
      if (changed.includes("document")) transport.setSegments(model.timeline.segments, model.N, (seg) => segmentLabel(model.words, seg));
      if (changed.includes("step")) transport.showStep(st.step, model.N, st.playing, model.timeline.segmentAt(st.step));
    };
    return transport;
  },
};
