/**
 * The view state: what the person is looking at, in one small observable store that the
 * panels read (the graph view, the timeline, the inspector, the sentence, the search box).
 *
 * NOTE [one view state]
 *   Before this store, each panel kept its own copy of "where are we" (the player's step, the
 *   canvas's selection, the app's collapsed set) and the app pushed changes to each by hand.
 *   Now a change is made once with `set()` and every subscriber hears which fields changed.
 *   The store holds plain data only (no DOM, no scene), so a notebook widget or a test can
 *   create one, and two viewers on one page each have their own.
 *
 * Fields:
 *   step            the timeline step k (0…N): the first k events have happened
 *   collapsed       Set of module paths drawn as one box
 *   expandedRepeats Set of module paths whose repeated blocks are shown one by one
 *   open            Set of group keys opened by the person or by search (loop/iteration/call
 *                   groups of graph/); graph code decides what a key means
 *   selection       { v: visible node index or −1, line: code line or null }
 *   search          { query, matches: [{ node, label }], at: index into matches or −1 }
 *   direction       "TB" or "LR": which way the layout flows
 *   levels          the run's repeated units (graph/groups.js runLevels), per document
 *   openUnits       per level, the unit drawn in full (the others are folded); follows the step
 *   playing         whether autoplay runs (animate/player.js keeps the clock, not the step)
 *   dynamicsOpen    whether the training-dynamics panel (ui/dynamics.js) is expanded: closed
 *                   at first, a one-line summary that leaves the graph its height; the person's
 *                   choice survives a new document, as the direction does
 *   document        a counter bumped when a new document is shown (panels rebuild their index)
 *   view            a counter bumped when a new scene is drawn (relayout: panels re-read it)
 *
 * NOTE [the step's one home]
 *   The step lives here and nowhere else: animate/player.js reads and writes `step` through
 *   this store (its `k` is a getter), so the transport, the sentence, the inspector, a share
 *   link and a notebook's `step` trait all read one number.
 *
 * Panels read this store through the viewer (NOTE [one panel shape] in ui/registry.js): they
 * never keep their own copy of a field here.
 */
export function emptyViewState() {
  return {
    step: 0,
    collapsed: new Set(),
    expandedRepeats: new Set(),
    open: new Set(),
    selection: { v: -1, line: null },
    search: { query: "", matches: [], at: -1 },
    direction: "TB",
    levels: [],
    openUnits: [],
    playing: false,
    dynamicsOpen: false,
    document: 0,
    view: 0,
  };
}

export class ViewState {
  constructor(initial = {}) {
    this.state = { ...emptyViewState(), ...initial };
    this._subs = new Set();
  }

  get(key) { return this.state[key]; }

  /**
   * Change some fields and tell the subscribers which ones changed. Sets and objects are
   * replaced, not mutated, so a subscriber may keep the old value to compare.
   */
  set(patch) {
    const changed = [];
    for (const [key, value] of Object.entries(patch)) {
      if (!(key in this.state)) throw new Error(`unknown view state field: ${key}`);
      if (this.state[key] === value) continue;
      this.state[key] = value;
      changed.push(key);
    }
    if (changed.length) for (const fn of [...this._subs]) fn(this.state, changed);
    return changed;
  }

  /** Call `fn(state, changedKeys)` after each change; returns the unsubscribe function. */
  subscribe(fn) {
    this._subs.add(fn);
    return () => this._subs.delete(fn);
  }

  /** Toggle membership of `item` in the Set field `key` (collapsed, expandedRepeats, open). */
  toggle(key, item, on = undefined) {
    const next = new Set(this.state[key]);
    const want = on === undefined ? !next.has(item) : on;
    if (want) next.add(item); else next.delete(item);
    this.set({ [key]: next });
    return want;
  }

  /**
   * Reset everything but the direction, the dynamics panel's fold and the counters for a new document. (The camera is the
   * canvas's own, render/canvas.js `cam`: a share link reads it there, app/link.js.)
   */
  reset(fields = {}) {
    const { direction, dynamicsOpen, document, view } = this.state;
    this.set({ ...emptyViewState(), direction, dynamicsOpen, document, view, ...fields });
  }

  /** Bump a counter field (`document`, `view`). */
  bump(key) { return this.set({ [key]: this.state[key] + 1 }); }
}
