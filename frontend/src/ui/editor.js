/**
 * The code editor: CodeMirror 6 (pinned `codemirror@6.0.2`; npm's `latest` is CM5 code) with
 * Python highlighting, line numbers, Ctrl/Cmd+Enter to run, and the line marks that link
 * code and graph: "current" and "just done" (two-level highlight, in the text and in a
 * gutter), the error line, and lines the user selected.
 */
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";
import { indentWithTab } from "@codemirror/commands";
import { HighlightStyle, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { oneDarkHighlightStyle, oneDarkTheme } from "@codemirror/theme-one-dark";
import { Compartment, EditorState, Prec, RangeSet, StateEffect, StateField } from "@codemirror/state";
import { Decoration, GutterMarker, WidgetType, gutter, keymap } from "@codemirror/view";

const setMarks = StateEffect.define();

/**
 * NOTE [an editor for code, with a way out]: Tab indents inside the editor (CodeMirror's
 * indentWithTab); Esc then Tab leaves it, as is conventional (CodeMirror's tab-focus mode), and
 * Alt+G moves focus to the graph. New lines indent by the code's own unit (`codeIndent`: the
 * first indented block's step, else 4 spaces), and long lines can wrap (`setWrap`).
 */
export function codeIndent(text) {
  const lines = String(text).split("\n");
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!/:\s*(#.*)?$/.test(lines[i])) continue;
    const own = /^[ \t]*/.exec(lines[i])[0];
    const next = lines.slice(i + 1).find((l) => l.trim());
    const ind = next ? /^[ \t]*/.exec(next)[0] : "";
    if (ind.length > own.length && ind.startsWith(own)) return ind.slice(own.length);
  }
  return "    ";
}

class Mark extends GutterMarker {
  constructor(cls, text, title) { super(); this.cls = cls; this.text = text; this.title = title; }
  eq(o) { return o.cls === this.cls; }
  toDOM() {
    const s = document.createElement("span");
    s.className = this.cls;
    s.textContent = this.text;
    s.title = this.title;
    return s;
  }
}
// One Dark, with its three dimmest text colours (comments, names, keywords) lightened so that
// all code meets WCAG AA contrast (4.5:1) on its background and on the highlighted lines.
const AA = { "#7d8799": "#adb5c2", "#e06c75": "#f29aa2", "#c678dd": "#d69be6" };
const oneDark = [oneDarkTheme, syntaxHighlighting(HighlightStyle.define(
  oneDarkHighlightStyle.specs.map((spec) => (spec.color && AA[spec.color] ? { ...spec, color: AA[spec.color] } : spec)),
))];

const MARKS = {
  current: [new Mark("gt-mark-current", "▶", "current step"), Decoration.line({ class: "gt-line-current" })],
  justDone: [new Mark("gt-mark-done", "›", "just done"), Decoration.line({ class: "gt-line-done" })],
  error: [new Mark("gt-mark-error", "✖", "error raised here"), Decoration.line({ class: "gt-line-error" })],
  cause: [new Mark("gt-mark-cause", "✎", "changed in place here (the cause of the error)"), Decoration.line({ class: "gt-line-cause" })],
  selected: [new Mark("gt-mark-sel", "●", "selected line"), Decoration.line({ class: "gt-line-sel" })],
  hint: [new Mark("gt-mark-hint", "⚑", "a hint or a NaN concerns this line (see Hints)"), Decoration.line({ class: "gt-line-hint" })],
};
const USER_BACKWARD = Decoration.line({ class: "gt-line-user-backward" });
// Lines run with gradients off (analysis.grad_off, ui/definitions.js): tinted, and the `with`
// line says so at its end.
const GRAD_OFF = Decoration.line({ class: "gt-line-nograd", attributes: { title: "gradients off: no graph recorded here" } });
class Note extends WidgetType {
  constructor(text) { super(); this.text = text; }
  eq(o) { return o.text === this.text; }
  toDOM() {
    const s = document.createElement("span");
    s.className = "gt-nograd-head";
    s.textContent = `  ⊘ ${this.text}`;
    return s;
  }
}
// torch's checks folded on their line (ui/folded.js): a box with the verdict at the line's end.
class FoldBox extends WidgetType {
  constructor(m) { super(); this.m = m; }
  eq(o) { return o.m.text === this.m.text && o.m.title === this.m.title; }
  toDOM() {
    const s = document.createElement("span");
    s.className = `gt-folded-box gt-folded-${this.m.verdict}`;
    s.textContent = `⊞ ${this.m.text}`;
    s.title = this.m.title;
    return s;
  }
}
const ORDER = ["hint", "selected", "justDone", "current", "cause", "error"];

function build(state, marks) {
  const lines = new Map();
  for (const kind of ORDER) {
    for (const line of [].concat(marks[kind] ?? [])) {  // `hint` is a list of lines
      if (line == null || line < 1 || line > state.doc.lines) continue;
      lines.set(line, kind);
    }
  }
  const sorted = [...lines.entries()].sort((a, b) => a[0] - b[0]);
  const deco = [], gut = [];
  // A custom Function's `backward` while the backward runs it (graph/custom.js): lines only.
  const user = new Set((marks.userBackward || []).filter((l) => l >= 1 && l <= state.doc.lines));
  for (const line of [...new Set([...user, ...lines.keys()])].sort((a, b) => a - b)) {
    const from = state.doc.line(line).from;
    if (user.has(line)) deco.push(USER_BACKWARD.range(from));
    const kind = lines.get(line);
    if (kind) { deco.push(MARKS[kind][1].range(from)); gut.push(MARKS[kind][0].range(from)); }
  }
  const off = marks.gradOff || { lines: [], heads: [] };
  for (const line of new Set(off.lines)) if (line >= 1 && line <= state.doc.lines) deco.push(GRAD_OFF.range(state.doc.line(line).from));
  for (const h of off.heads) {
    if (h.line >= 1 && h.line <= state.doc.lines) deco.push(Decoration.widget({ widget: new Note(h.text), side: 1 }).range(state.doc.line(h.line).to));
  }
  for (const m of marks.folded || []) {
    if (m.line >= 1 && m.line <= state.doc.lines) deco.push(Decoration.widget({ widget: new FoldBox(m), side: 2 }).range(state.doc.line(m.line).to));
  }
  return { deco: Decoration.set(deco, true), gutter: RangeSet.of(gut), marks };
}

const marksField = StateField.define({
  create: (state) => build(state, {}),
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setMarks)) return build(tr.state, e.value);
    if (tr.docChanged) return build(tr.state, { ...value.marks, current: null, justDone: null, selected: null, userBackward: null, gradOff: null, folded: null });
    return value;
  },
  provide: (f) => EditorView.decorations.from(f, (v) => v.deco),
});

/** The nonce that lets CodeMirror's one <style> element past the page's Content-Security-Policy
 * (the server puts it in #gt-config: NOTE [style nonce] in backend/gradtrace/api/security.py).
 * Elsewhere (a shadow root) CodeMirror uses adopted style sheets and needs none. */
function styleNonce() {
  try { return JSON.parse(document.getElementById("gt-config")?.textContent || "{}").style_nonce || ""; } catch { return ""; }
}

export class CodeEditor {
  /** @param {{onRun: () => void, onLineSelect: (line: number) => void, onLeave?: () => void}} cb */
  constructor(parent, cb) {
    this.readOnly = new Compartment();
    this.theme = new Compartment();
    this.indent = new Compartment();
    this.wrap = new Compartment();
    const dark = matchMedia("(prefers-color-scheme: dark)");
    this.marks = {};
    this.view = new EditorView({
      parent,
      state: EditorState.create({
        doc: "",
        extensions: [
          Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => { cb.onRun(); return true; } },
            { key: "Alt-g", run: () => { if (!cb.onLeave) return false; cb.onLeave(); return true; } }])),
          basicSetup,
          keymap.of([indentWithTab]),
          this.indent.of(indentUnit.of("    ")),
          this.wrap.of([]),
          python(),
          marksField,
          gutter({ class: "gt-gutter", markers: (v) => v.state.field(marksField).gutter }),
          this.readOnly.of([]),
          this.theme.of(dark.matches ? oneDark : []),
          EditorView.contentAttributes.of({ "aria-label": "Python code (Tab indents; Esc then Tab leaves; Alt+G goes to the graph)",
            tabindex: "0", "aria-keyshortcuts": "Alt+G" }),
          EditorView.cspNonce.of(styleNonce()),
          EditorView.updateListener.of((u) => {
            // Typed or pasted code: new lines follow its indentation (after this update).
            if (u.docChanged) queueMicrotask(() => this._followIndent());
            if (!u.selectionSet || u.docChanged) return;
            if (!u.transactions.some((t) => t.isUserEvent("select"))) return;
            cb.onLineSelect(u.state.doc.lineAt(u.state.selection.main.head).number);
          }),
        ],
      }),
    });
    // The editor follows the system theme like the rest of the page.
    dark.addEventListener("change", () => this.view.dispatch({ effects: this.theme.reconfigure(dark.matches ? oneDark : []) }));
  }

  get code() { return this.view.state.doc.toString(); }

  setCode(text) {
    this.view.dispatch({ changes: { from: 0, to: this.view.state.doc.length, insert: text },
      effects: this.indent.reconfigure(indentUnit.of(codeIndent(text))) });
  }

  _followIndent() {
    const unit = codeIndent(this.code);
    if (unit !== this.view.state.facet(indentUnit)) this.view.dispatch({ effects: this.indent.reconfigure(indentUnit.of(unit)) });
  }

  /** The indentation new lines get (the code's own unit). */
  get indentUnit() { return this.view.state.facet(indentUnit); }

  /** Soft-wrap long lines (or not). */
  setWrap(on) {
    this.wrapped = !!on;
    this.view.dispatch({ effects: this.wrap.reconfigure(on ? EditorView.lineWrapping : []) });
  }

  setReadOnly(on) {
    this.view.dispatch({ effects: this.readOnly.reconfigure(on ? [EditorState.readOnly.of(true), EditorView.editable.of(false)] : []) });
  }

  /** Update some marks ({current, justDone, error, cause, selected}: line numbers or null). */
  mark(partial, { scroll = false } = {}) {
    this.marks = { ...this.marks, ...partial };
    const effects = [setMarks.of(this.marks)];
    const line = partial.current ?? partial.error;
    if (scroll && line != null && line >= 1 && line <= this.view.state.doc.lines) {
      effects.push(EditorView.scrollIntoView(this.view.state.doc.line(line).from, { y: "nearest" }));
    }
    this.view.dispatch({ effects });
  }

  focus() { this.view.focus(); }
}
