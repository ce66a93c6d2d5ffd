/**
 * The iteration picker: "iteration 7 of 20" (or "cell call 37 of 200", the module's own name) with previous/next
 * buttons and a number box, for the outermost level of repeated units (graph/groups.js).
 * Picking a unit asks `onPick(u)`; the page moves the transport there and the view follows.
 * Hidden when the run has no repeated units.
 */
export class IterationPicker {
  constructor(host, { onPick }) {
    this.onPick = onPick;
    this.root = document.createElement("span");
    this.root.className = "gt-iter";
    this.root.setAttribute("role", "group");
    this.root.setAttribute("aria-label", "Iteration");
    this.root.hidden = true;
    this.prev = button("‹", "Previous iteration");
    this.next = button("›", "Next iteration");
    this.noun = document.createElement("span");
    this.input = document.createElement("input");
    this.input.type = "number";
    this.input.min = "1";
    this.input.className = "gt-iter-n";
    this.input.style.width = "4.5em";
    this.of = document.createElement("span");
    const label = document.createElement("label");
    label.style.margin = "0 4px";  // the ‹ and › buttons do not touch the words
    label.append(this.noun, " ", this.input, this.of);
    this.root.append(this.prev, label, this.next);
    host.append(this.root);
    this.level = null;
    this.u = 0;
    this.prev.addEventListener("click", () => this.pick(this.u - 1));
    this.next.addEventListener("click", () => this.pick(this.u + 1));
    this.input.addEventListener("change", () => this.pick(Number(this.input.value) - 1));
  }

  /** Show the picker for a level (or hide it for null). */
  setLevel(level) {
    this.level = level;
    this.root.hidden = !level;
    if (!level) return;
    const call = level.kind === "call", block = level.kind === "block";
    this.noun.textContent = level.names ? "call" : call ? `${level.label} call` : block ? level.label : "iteration";
    this.of.textContent = ` of ${level.count}`;
    this.input.max = String(level.count);
    this.input.setAttribute("aria-label", level.names ? `Call number (${level.label})` : call ? `${level.label} call number` : block ? `${level.label} number` : "Iteration number");
    const what = call ? "call" : block ? "block" : "iteration";
    this.prev.setAttribute("aria-label", `Previous ${what}`);
    this.next.setAttribute("aria-label", `Next ${what}`);
  }

  /** The unit now open (0-based). */
  update(u) {
    if (!this.level) return;
    this.u = u;
    // Calls of several models (NOTE [several models, one picker] in graph/groups.js): the
    // picker says whose call is open.
    const name = this.level.names && this.level.names[u];
    if (name) {
      this.noun.textContent = "call";
      this.of.textContent = ` of ${this.level.count}: ${name.path} call ${name.call + 1} of ${name.of}`;
    }
    if (document.activeElement !== this.input) this.input.value = String(u + 1);
    this.prev.disabled = u <= 0;
    this.next.disabled = u >= this.level.count - 1;
  }

  pick(u) {
    if (!this.level || !Number.isInteger(u)) return;
    const clamped = Math.max(0, Math.min(this.level.count - 1, u));
    this.update(clamped);
    this.onPick(clamped);
  }
}

function button(text, label) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.title = label;
  return b;
}

/**
 * The picker as a viewer panel (NOTE [one panel shape] in ui/registry.js), beside the graph's
 * size line: it follows the open unit of the outermost level (app/navigate.js followUnits).
 */
export const iterationsPanel = {
  id: "iterations",
  mount(ctx) {
    const stats = ctx.part("graph-stats");
    if (!stats || !stats.parentElement) return null;
    const picker = new IterationPicker(stats.parentElement, { onPick: (u) => ctx.pickUnit(u) });
    return {
      picker,
      update(model, st, changed) {
        if (changed.includes("document")) picker.setLevel(st.levels[0] || null);
        if (changed.includes("document") || changed.includes("openUnits")) picker.update(st.openUnits[0] ?? 0);
      },
    };
  },
};
