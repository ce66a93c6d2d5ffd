/**
 * The page's exercise picker: every lesson's exercise (backend/gradtrace/lessons, NOTE
 * [exercises in lesson files]) with its task, its starting code loaded into the editor, the
 * reference solution behind a button, and the progress kept in this browser, exported and
 * imported as a file. While an exercise is open, each run asks the service to check its goals
 * (`exercise` on POST /api/runs); the checklist is ui/goals.js.
 */
import { el } from "./dom.js";
import { exerciseProgress, parseProgress, progressFile, saveProgress } from "./goals.js";

export class Exercises {
  /**
   * @param {{picker: HTMLDetailsElement, body: HTMLElement, panel: HTMLElement, task: HTMLElement,
   *          solution: HTMLButtonElement, solutionText: HTMLElement}} els
   * @param {{setCode: (code:string)=>void, run: ()=>void}} cb
   */
  constructor(els, lessons, cb) {
    this.els = els;
    this.cb = cb;
    this.lessons = lessons.filter((l) => l.exercise);
    this.current = null;
    if (!els.picker || !this.lessons.length) return;
    els.picker.hidden = false;
    els.solution.addEventListener("click", () => this.toggleSolution());
    this.render();
  }

  /** What a run request adds while an exercise is open. */
  requestFields() { return this.current ? { exercise: this.current.id } : {}; }

  render() {
    const progress = exerciseProgress();
    const done = this.lessons.filter((l) => progress[l.stem] && progress[l.stem].done).length;
    const items = this.lessons.map((l) => {
      const ok = progress[l.stem] && progress[l.stem].done;
      return el("li", {}, el("button", { type: "button", class: "gt-example", "data-exercise": l.id, onclick: () => this.open(l) },
        `${String(l.number).padStart(2, "0")} ${l.title}${ok ? " ✓" : ""}`));
    });
    const file = el("input", { type: "file", accept: "application/json,.json", class: "gt-exercise-import", "aria-label": "Import progress from a file" });
    file.addEventListener("change", () => this.importFile(file));
    this.els.body.replaceChildren(
      el("p", { class: "gt-muted", "data-gt": "exercise-progress" }, `${done} of ${this.lessons.length} exercises done (kept in this browser)`),
      el("ul", { class: "gt-exercise-list", "aria-label": "Exercises" }, ...items),
      el("div", { class: "gt-exercise-io" },
        el("button", { type: "button", onclick: () => this.exportFile() }, "Export progress"),
        el("label", {}, "Import progress ", file)),
      el("p", { class: "gt-muted", role: "status", "aria-live": "polite", "data-gt": "exercise-io-status" }));
  }

  open(lesson) {
    this.current = lesson;
    this.els.picker.open = false;
    this.els.panel.hidden = false;
    this.els.task.textContent = `Exercise ${lesson.number}, ${lesson.title}: ${lesson.exercise.task} Goals: ${lesson.exercise.goals.join("; ")}.`;
    this.els.solutionText.hidden = true;
    this.els.solutionText.textContent = lesson.exercise.solution;
    this.els.solution.textContent = "Show solution";
    this.els.solution.setAttribute("aria-expanded", "false");
    this.cb.setCode(lesson.exercise.start);
  }

  /** Leave the exercise (another example was picked). */
  close() {
    this.current = null;
    this.els.panel.hidden = true;
  }

  toggleSolution() {
    const show = this.els.solutionText.hidden;
    this.els.solutionText.hidden = !show;
    this.els.solution.textContent = show ? "Hide solution" : "Show solution";
    this.els.solution.setAttribute("aria-expanded", String(show));
  }

  /** A run's goals came back: refresh the done marks. */
  onReport() { this.render(); }

  exportFile() {
    const blob = new Blob([progressFile(exerciseProgress())], { type: "application/json" });
    const a = el("a", { href: URL.createObjectURL(blob), download: "gradtrace-progress.json" });
    document.body.append(a);
    a.click();
    a.remove();
  }

  async importFile(input) {
    const status = this.els.body.querySelector('[data-gt="exercise-io-status"]');
    const file = input.files && input.files[0];
    if (!file) return;
    try {
      const incoming = parseProgress(await file.text());
      const merged = { ...exerciseProgress() };
      for (const [stem, v] of Object.entries(incoming)) if (v.done || !merged[stem]) merged[stem] = v;
      saveProgress(merged);
      this.render();
      const after = this.els.body.querySelector('[data-gt="exercise-io-status"]');
      if (after) after.textContent = `Imported ${Object.keys(incoming).length} exercises' progress.`;
    } catch (err) {
      if (status) status.textContent = `Could not import: ${err.message}`;
    }
  }
}
